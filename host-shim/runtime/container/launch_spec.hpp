#pragma once
// What the shim tells cove-sandbox-init (JSON on its stdin) and what the launcher answers (one
// line on fd 3). Everything the launcher needs is in the spec: it reads no configuration itself.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/container/cgroups.hpp"

namespace cove::shim::container {

struct LaunchSpec {
  std::string id;                   // hostname
  std::string sandbox_dir;          // host dir: disk.img, agent.log, mount points
  std::vector<std::string> layers;  // read-only root layers, uppermost first (host dirs)
  uint32_t id_base = 0;             // host uid/gid of the sandbox's root
  uint32_t id_count = 0;
  CgroupPlan cgroups;
  CgroupLimits limits;
  // Network: with internet, the launcher attaches a veth for `slot` (HostNetwork) and the init
  // configures eth0 with address/prefix via gateway; without it, only lo.
  bool internet = false;
  int64_t slot = 0;
  std::string bridge, subnet;       // NetworkConfig for HostNetwork
  std::string address, gateway;
  int prefix_length = 0;
  std::string agent_path = "/usr/local/bin/cove-agent";
  uint16_t agent_port = 49983;
  std::string agent_socket = "/run/cove/agent.sock";
  std::string changes_dir;          // non-empty: the writable layer lives here, not on disk.img
  // Restore instead of boot: the launcher prepares the root (disk, idmapped layers, overlay) and
  // execs CRIU, whose restored init becomes the shim's child. No network (the shim attaches it to
  // the restored namespace afterwards).
  std::string checkpoint_dir;       // CRIU images
  std::string criu_path;
  std::string stdout_key;           // CheckpointInfo::stdout_key
};

std::string to_json(const LaunchSpec& spec);
// Throws std::invalid_argument on malformed JSON or missing/ill-typed fields.
LaunchSpec launch_spec_from_json(std::string_view text);

// The launcher's answer: "OK <pid> <loop number>\n" (-1: no disk image, a build sandbox) or
// "ERROR <message>\n"; a restore answers "RESTORING <loop number>\n" just before it execs CRIU
// (whose exit status and pidfile then tell the rest).
struct LaunchReport {
  bool ok = false;
  bool restoring = false;
  pid_t pid = 0;
  int loop = -1;
  std::string error;
};
std::string format_launch_ok(pid_t pid, int loop);
std::string format_launch_error(std::string_view message);
std::string format_launch_restoring(int loop);
// nullopt for anything that is neither (e.g. the launcher died mid-line).
std::optional<LaunchReport> parse_launch_report(std::string_view line);

}  // namespace cove::shim::container
