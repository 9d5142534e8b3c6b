#include "runtime/container/cgroups.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <set>
#include <stdexcept>
#include <thread>

#include "runtime/container/host_files.hpp"

namespace cove::shim::container {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount_path(std::string_view s) {
  auto oct = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && oct(s[i + 1]) && oct(s[i + 2]) && oct(s[i + 3])) {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

uint64_t to_u64(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

void make_dir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) throw_errno("create cgroup");
}

std::string parent_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

}  // namespace

bool CgroupLayout::pure_v2() const {
  return !unified.empty() && !v1.count("memory") &&
         std::find(unified_controllers.begin(), unified_controllers.end(), "memory") != unified_controllers.end();
}

CgroupLayout parse_cgroup_layout(std::string_view mountinfo, std::string_view unified_controllers) {
  CgroupLayout layout;
  for (std::string_view line : split(mountinfo, '\n')) {
    auto fields = split(line, ' ');
    // id parent maj:min root mountpoint options [optional...] - fstype source superoptions
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 7 || dash == fields.end() || fields.end() - dash < 4) continue;
    std::string_view fstype = dash[1];
    std::string mount_point = unescape_mount_path(fields[4]);
    if (fstype == "cgroup2") {
      if (layout.unified.empty()) layout.unified = mount_point;
    } else if (fstype == "cgroup") {
      for (std::string_view opt : split(dash[3], ',')) {
        for (const char* c : {"memory", "cpu", "cpuacct", "pids", "freezer"}) {
          if (opt == c && !layout.v1.count(c)) layout.v1[c] = mount_point;
        }
      }
    }
  }
  if (!layout.unified.empty()) {
    for (auto c : split(unified_controllers, ' ')) {
      if (!c.empty() && c.back() == '\n') c.remove_suffix(1);
      if (!c.empty()) layout.unified_controllers.emplace_back(c);
    }
  }
  return layout;
}

CgroupLayout detect_cgroup_layout() {
  std::string mountinfo = read_text("/proc/self/mountinfo");
  CgroupLayout first = parse_cgroup_layout(mountinfo, "");
  std::string controllers;
  if (!first.unified.empty()) try_read_text(first.unified + "/cgroup.controllers", controllers);
  return parse_cgroup_layout(mountinfo, controllers);
}

std::vector<std::string> CgroupPlan::groups() const {
  std::vector<std::string> out;
  for (const std::string* g : {&unified, &memory, &cpu, &cpuacct, &pids, &freezer}) {
    if (!g->empty() && std::find(out.begin(), out.end(), *g) == out.end()) out.push_back(*g);
  }
  return out;
}

CgroupPlan plan_cgroups(const CgroupLayout& layout, const std::string& id) {
  CgroupPlan plan;
  if (!layout.unified.empty()) plan.unified = layout.unified + "/cove/" + id;
  if (layout.pure_v2()) {
    for (const char* c : {"cpu", "pids"}) {
      if (std::find(layout.unified_controllers.begin(), layout.unified_controllers.end(), c) ==
          layout.unified_controllers.end()) {
        throw std::runtime_error(std::string("cgroup v2 lacks the ") + c + " controller");
      }
    }
    plan.v2 = true;
    return plan;
  }
  auto group = [&](const char* c) {
    auto it = layout.v1.find(c);
    return it == layout.v1.end() ? std::string() : it->second + "/cove/" + id;
  };
  plan.memory = group("memory");
  plan.cpu = group("cpu");
  plan.cpuacct = group("cpuacct");
  plan.pids = group("pids");
  plan.freezer = group("freezer");
  if (plan.memory.empty() || plan.cpu.empty() || plan.pids.empty()) {
    throw std::runtime_error("no usable cgroup hierarchy (need memory, cpu and pids control)");
  }
  return plan;
}

void create_cgroups(const CgroupPlan& plan, const CgroupLimits& limits) {
  if (plan.v2) {
    // Controllers must be enabled on every level above the group.
    std::string root = parent_of(parent_of(plan.unified));
    std::string cove = parent_of(plan.unified);
    write_text(root + "/cgroup.subtree_control", "+memory +cpu +pids", "enable cgroup controllers");
    make_dir(cove);
    write_text(cove + "/cgroup.subtree_control", "+memory +cpu +pids", "enable cgroup controllers");
    make_dir(plan.unified);
    const std::string& g = plan.unified;
    write_text(g + "/memory.max", std::to_string(limits.memory_bytes), "set memory limit");
    try_write_text(g + "/memory.swap.max", "0");
    write_text(g + "/cpu.max", std::to_string(limits.cpu_quota_us) + " " + std::to_string(limits.cpu_period_us),
               "set cpu limit");
    write_text(g + "/pids.max", std::to_string(limits.pids_max), "set pids limit");
    return;
  }
  for (const std::string& g : plan.groups()) {
    make_dir(parent_of(g));
    make_dir(g);
  }
  write_text(plan.memory + "/memory.limit_in_bytes", std::to_string(limits.memory_bytes), "set memory limit");
  // Without swap accounting the file is absent; with it, memory+swap gets the same ceiling.
  if (exists(plan.memory + "/memory.memsw.limit_in_bytes")) {
    write_text(plan.memory + "/memory.memsw.limit_in_bytes", std::to_string(limits.memory_bytes),
               "set memory+swap limit");
  }
  write_text(plan.cpu + "/cpu.cfs_period_us", std::to_string(limits.cpu_period_us), "set cpu period");
  write_text(plan.cpu + "/cpu.cfs_quota_us", std::to_string(limits.cpu_quota_us), "set cpu quota");
  write_text(plan.pids + "/pids.max", std::to_string(limits.pids_max), "set pids limit");
}

void join_cgroups(const CgroupPlan& plan, pid_t pid) {
  for (const std::string& g : plan.groups()) write_text(g + "/cgroup.procs", std::to_string(pid), "join cgroup");
}

std::vector<pid_t> cgroup_pids(const CgroupPlan& plan) {
  std::set<pid_t> pids;
  for (const std::string& g : plan.groups()) {
    std::string text;
    if (!try_read_text(g + "/cgroup.procs", text)) continue;
    for (auto p : split(text, '\n')) {
      pid_t v = 0;
      if (std::from_chars(p.data(), p.data() + p.size(), v).ec == std::errc() && v > 0) pids.insert(v);
    }
  }
  return {pids.begin(), pids.end()};
}

void kill_cgroup_processes(const CgroupPlan& plan) {
  if (!plan.unified.empty() && try_write_text(plan.unified + "/cgroup.kill", "1")) return;
  // No cgroup.kill (pure v1, or a kernel before 5.14): stop everything so nothing forks while we
  // kill, then thaw so the kills are delivered.
  bool frozen = !plan.freezer.empty() && try_write_text(plan.freezer + "/freezer.state", "FROZEN");
  for (int round = 0; round < 10; ++round) {
    auto pids = cgroup_pids(plan);
    if (pids.empty()) break;
    for (pid_t p : pids) kill(p, SIGKILL);
    if (frozen) {
      try_write_text(plan.freezer + "/freezer.state", "THAWED");
      frozen = false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (frozen) try_write_text(plan.freezer + "/freezer.state", "THAWED");
}

bool wait_cgroups_empty(const CgroupPlan& plan, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    if (cgroup_pids(plan).empty()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
  }
}

bool remove_cgroups(const CgroupPlan& plan) {
  bool ok = true;
  for (const std::string& g : plan.groups()) {
    for (int attempt = 0;; ++attempt) {
      if (rmdir(g.c_str()) == 0 || errno == ENOENT) break;
      if (errno != EBUSY || attempt >= 100) {
        ok = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return ok;
}

std::string freezer_group(const CgroupPlan& plan) {
  if (!plan.unified.empty() && exists(plan.unified + "/cgroup.freeze")) return plan.unified;
  return plan.freezer;
}

std::optional<bool> parse_cgroup_events_frozen(std::string_view events) {
  for (auto line : split(events, '\n')) {
    constexpr std::string_view key = "frozen ";
    if (line.substr(0, key.size()) == key) return to_u64(line.substr(key.size())) != 0;
  }
  return std::nullopt;
}

namespace {
bool v2_freezer(const std::string& group) { return exists(group + "/cgroup.freeze"); }

// The state the kernel reports: v2 "frozen 1" only once every task is stopped; v1 FREEZING
// until then.
bool reached(const std::string& group, bool v2, bool frozen) {
  std::string text;
  if (v2) {
    if (!try_read_text(group + "/cgroup.events", text)) return false;
    auto state = parse_cgroup_events_frozen(text);
    return state && *state == frozen;
  }
  if (!try_read_text(group + "/freezer.state", text)) return false;
  return text.rfind(frozen ? "FROZEN" : "THAWED", 0) == 0;
}
}  // namespace

void set_cgroups_frozen(const CgroupPlan& plan, bool frozen, std::chrono::milliseconds timeout) {
  std::string group = freezer_group(plan);
  if (group.empty()) throw std::runtime_error("no cgroup freezer");
  bool v2 = v2_freezer(group);
  if (v2) {
    write_text(group + "/cgroup.freeze", frozen ? "1" : "0", frozen ? "freeze" : "thaw");
  } else {
    write_text(group + "/freezer.state", frozen ? "FROZEN" : "THAWED", frozen ? "freeze" : "thaw");
  }
  // Freezing a small tree takes tens of microseconds: poll finely, then back off.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    if (reached(group, v2, frozen)) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error(frozen ? "the sandbox did not freeze in time" : "the sandbox did not thaw in time");
    }
    // v1 retries the freeze on each write of FROZEN (a task in an uninterruptible sleep delays it).
    if (!v2 && frozen) try_write_text(group + "/freezer.state", "FROZEN");
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
  }
}

bool cgroups_frozen(const CgroupPlan& plan) {
  std::string group = freezer_group(plan);
  if (group.empty()) return false;
  std::string text;
  if (v2_freezer(group)) return try_read_text(group + "/cgroup.freeze", text) && text.rfind("1", 0) == 0;
  return try_read_text(group + "/freezer.state", text) && text.rfind("THAWED", 0) != 0;
}

uint64_t parse_cpu_stat_usage_usec(std::string_view cpu_stat) {
  for (auto line : split(cpu_stat, '\n')) {
    constexpr std::string_view key = "usage_usec ";
    if (line.substr(0, key.size()) == key) return to_u64(line.substr(key.size()));
  }
  return 0;
}

CgroupUsage read_cgroup_usage(const CgroupPlan& plan) {
  CgroupUsage u;
  std::string text;
  if (plan.v2) {
    if (try_read_text(plan.unified + "/cpu.stat", text)) u.cpu_ns = parse_cpu_stat_usage_usec(text) * 1000;
    if (try_read_text(plan.unified + "/memory.current", text)) u.memory_used = to_u64(text);
    if (try_read_text(plan.unified + "/memory.max", text) && text.rfind("max", 0) != 0) u.memory_limit = to_u64(text);
    return u;
  }
  if (!plan.cpuacct.empty() && try_read_text(plan.cpuacct + "/cpuacct.usage", text)) u.cpu_ns = to_u64(text);
  if (try_read_text(plan.memory + "/memory.usage_in_bytes", text)) u.memory_used = to_u64(text);
  if (try_read_text(plan.memory + "/memory.limit_in_bytes", text)) u.memory_limit = to_u64(text);
  return u;
}

}  // namespace cove::shim::container
