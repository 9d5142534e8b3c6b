#pragma once
// Each sandbox's cgroups. Two layouts exist and are detected at run time:
//   pure v2  — cgroup2 at the root with memory among its controllers: one group
//              <unified>/cove/<id> carries the limits and cgroup.kill;
//   hybrid/v1 — limits in the v1 memory, cpu, cpuacct, pids hierarchies (<mount>/cove/<id>),
//              plus a v2 group under the unified mount (if any) for cgroup.kill / cgroup.freeze,
//              and the v1 freezer (if any) as the fallback for killing without cgroup.kill.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cove::shim::container {

struct CgroupLayout {
  std::string unified;                       // cgroup2 mount point, empty if none
  std::vector<std::string> unified_controllers;
  std::map<std::string, std::string> v1;     // controller → mount point
  bool pure_v2() const;
};

// From the text of /proc/self/mountinfo and of <unified>/cgroup.controllers (empty if there is no
// cgroup2 mount). Pure: the caller reads the files.
CgroupLayout parse_cgroup_layout(std::string_view mountinfo, std::string_view unified_controllers);
// Reads the running system's layout.
CgroupLayout detect_cgroup_layout();

struct CgroupPlan {
  bool v2 = false;            // limits and stats live in `unified`
  std::string unified;        // v2 group, empty when there is no cgroup2 mount
  std::string memory, cpu, cpuacct, pids, freezer;  // v1 groups (empty in v2 mode or if absent)
  std::vector<std::string> groups() const;          // every distinct group
};

// The groups of sandbox `id`. Throws std::runtime_error if memory/cpu/pids control is missing.
CgroupPlan plan_cgroups(const CgroupLayout& layout, const std::string& id);

struct CgroupLimits {
  uint64_t memory_bytes = 0;
  int64_t cpu_quota_us = 0;      // per period
  int64_t cpu_period_us = 100000;
  int64_t pids_max = 0;
};

// Creates the groups (and the `cove` parents) and writes the limits. Throws std::system_error.
void create_cgroups(const CgroupPlan& plan, const CgroupLimits& limits);
// Moves `pid` into every group.
void join_cgroups(const CgroupPlan& plan, pid_t pid);
// Pids listed in the groups' cgroup.procs (union).
std::vector<pid_t> cgroup_pids(const CgroupPlan& plan);
// SIGKILLs everything in the groups: cgroup.kill when there is a v2 group, otherwise
// freeze + kill + thaw through the v1 freezer (plain kill loop without one).
void kill_cgroup_processes(const CgroupPlan& plan);
// True once no group lists a process (waits at most `timeout`).
bool wait_cgroups_empty(const CgroupPlan& plan, std::chrono::milliseconds timeout);
// Removes the groups that exist; retries briefly while the kernel still counts exiting tasks.
// Returns false if some group could not be removed.
bool remove_cgroups(const CgroupPlan& plan);

// The group whose freezer stops the whole sandbox: the v2 group (cgroup.freeze) when there is
// one, else the v1 freezer group (freezer.state); empty if neither exists.
std::string freezer_group(const CgroupPlan& plan);
// Freezes or thaws every process of the sandbox and waits until the kernel reports the new
// state (v2: "frozen 1|0" in cgroup.events; v1: freezer.state FROZEN/THAWED). Idempotent.
// Throws std::runtime_error if there is no freezer or the state is not reached in `timeout`.
void set_cgroups_frozen(const CgroupPlan& plan, bool frozen, std::chrono::milliseconds timeout);
// True if the sandbox's freezer says frozen (or freezing).
bool cgroups_frozen(const CgroupPlan& plan);
// "frozen N" out of a v2 cgroup.events; nullopt when absent.
std::optional<bool> parse_cgroup_events_frozen(std::string_view events);

struct CgroupUsage {
  uint64_t cpu_ns = 0;
  uint64_t memory_used = 0;
  uint64_t memory_limit = 0;
};
CgroupUsage read_cgroup_usage(const CgroupPlan& plan);

// "usage_usec N" out of a v2 cpu.stat; 0 when absent.
uint64_t parse_cpu_stat_usage_usec(std::string_view cpu_stat);

}  // namespace cove::shim::container
