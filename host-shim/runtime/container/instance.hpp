#pragma once
// What the shim keeps on disk about a sandbox (<state>/sandboxes/<id>/instance.json) so it can
// find the instance again after a restart, or clean up after a half-made one.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/container/cgroups.hpp"

namespace cove::shim::container {

struct InstanceRecord {
  std::string id;
  int64_t slot = 0;
  pid_t pid = 0;                 // host pid of the sandbox init; 0 until started
  uint64_t start_time = 0;       // its start time (/proc/<pid>/stat field 22): guards against pid reuse
  int loop = -1;                 // loop device number of its disk
  bool internet = false;
  int cpu_count = 0;             // for stats
  CgroupPlan cgroups;
  std::vector<std::string> layers;
  std::string changes_dir;       // SandboxSpec::changes_dir, handed over at destroy
  uint32_t id_base = 0;          // host id of the sandbox's root (to hand changes_dir back unshifted)
  uint32_t id_count = 0;
};

std::string to_json(const InstanceRecord& record);
// Throws std::invalid_argument.
InstanceRecord instance_from_json(std::string_view text);

// Written to a temporary file and renamed, so a reader never sees half a record.
void save_instance(const std::string& path, const InstanceRecord& record);
std::optional<InstanceRecord> load_instance(const std::string& path);

// Field 22 (starttime) of a /proc/<pid>/stat line; the command name may contain spaces and ')'.
std::optional<uint64_t> parse_stat_start_time(std::string_view stat);
std::optional<uint64_t> process_start_time(pid_t pid);

}  // namespace cove::shim::container
