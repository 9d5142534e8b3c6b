#pragma once
// Talking to CRIU (run as a separate process, its CLI): the argv of a dump and of a restore of a
// sandbox, and a client-safe one-line reason out of its log. Pure functions; the runtime runs them.
//
// What makes our container dumpable (found on the real thing, see the report of issue 8):
//  - the host's device nodes bound into /dev are external mounts (keys dev_<name>);
//  - the agent's stdout/stderr (agent.log in the sandbox dir, outside the container) is an
//    external file, handed back on restore as an inherited fd;
//  - the cgroups are not CRIU's business: the restore runs inside the sandbox's groups;
//  - the network namespace is dumped with loopback only (eth0 is detached first and attached
//    again afterwards, with the address of whatever slot the sandbox has then).
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cove::shim::container {

// The key CRIU gives an external regular file: "file[<mnt_id hex>:<inode hex>]".
std::string criu_external_file_key(int mnt_id, uint64_t inode);
// "mnt_id: N" out of a /proc/<pid>/fdinfo/<fd> text; -1 when absent.
int parse_fdinfo_mnt_id(std::string_view fdinfo);

struct CriuDump {
  std::string criu;            // the binary
  pid_t pid = 0;               // root of the tree (the sandbox init), host pid
  std::string images_dir;
  std::string log_file;        // absolute
  std::string freeze_cgroup;   // the sandbox's freezer group (CRIU keeps a frozen one frozen)
  std::string stdout_key;      // criu_external_file_key of the agent's log
  bool leave_running = false;
};
std::vector<std::string> criu_dump_argv(const CriuDump& d);

struct CriuRestore {
  std::string criu;
  std::string images_dir;
  std::string log_file;        // absolute
  std::string root;            // the prepared overlay root (absolute)
  std::string pidfile;         // absolute; CRIU writes the restored init's host pid
  int stdout_fd = -1;          // inherited by CRIU: becomes the agent's stdout/stderr
  std::string stdout_key;
};
std::vector<std::string> criu_restore_argv(const CriuRestore& r);

// One line for the client from a CRIU log: what could not be checkpointed or restored, in our
// words when we know the case, otherwise CRIU's first error with paths and source locations
// removed. Never contains a host path.
std::string criu_failure_reason(std::string_view log);
// criu_failure_reason's answer when a Unix socket's peer is outside the dumped tree.
inline constexpr std::string_view kOutsideConnectionReason = "a Unix socket is connected to something outside the sandbox";

}  // namespace cove::shim::container
