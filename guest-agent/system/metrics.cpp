#include "system/metrics.hpp"

#include <sys/statfs.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace cove::system {
namespace {
std::string slurp(const char* path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

std::optional<CpuTimes> parse_proc_stat(const std::string& text) {
  std::istringstream in(text);
  std::string label;
  in >> label;
  if (label != "cpu") return std::nullopt;
  uint64_t v[10] = {};
  int n = 0;
  while (n < 10 && in >> v[n]) ++n;
  if (n < 4) return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest time is already inside user/nice).
  uint64_t idle = v[3] + (n > 4 ? v[4] : 0);
  uint64_t total = 0;
  for (int i = 0; i < std::min(n, 8); ++i) total += v[i];
  return CpuTimes{total - idle, total};
}

std::optional<MemInfo> parse_meminfo(const std::string& text) {
  MemInfo m;
  bool have_total = false;
  std::istringstream in(text);
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (!(ls >> key >> kb)) continue;
    uint64_t bytes = kb * 1024;
    if (key == "MemTotal:") { m.total = bytes; have_total = true; }
    else if (key == "MemFree:") m.free = bytes;
    else if (key == "Buffers:") m.buffers = bytes;
    else if (key == "Cached:") m.cached += bytes;
    else if (key == "SReclaimable:") m.cached += bytes;  // gopsutil counts it as cache, as envd reports
  }
  if (!have_total) return std::nullopt;
  return m;
}

std::optional<MetricsSample> MetricsSampler::sample() {
  MetricsSample s;
  s.ts = static_cast<int64_t>(std::time(nullptr));
  s.cpu_count = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  auto cpu = parse_proc_stat(slurp("/proc/stat"));
  auto mem = parse_meminfo(slurp("/proc/meminfo"));
  if (!cpu || !mem) return std::nullopt;
  uint64_t dt = cpu->total - last_.total, db = cpu->busy - last_.busy;
  s.cpu_used_pct = dt ? std::round(10000.0 * static_cast<double>(db) / static_cast<double>(dt)) / 100.0 : 0;
  last_ = *cpu;
  s.mem_total = mem->total;
  uint64_t reclaimable = mem->free + mem->buffers + mem->cached;
  s.mem_used = mem->total > reclaimable ? mem->total - reclaimable : 0;
  s.mem_cache = mem->cached;
  struct statfs fs{};
  if (statfs("/", &fs) != 0) return std::nullopt;
  s.disk_total = static_cast<uint64_t>(fs.f_blocks) * fs.f_bsize;
  s.disk_used = static_cast<uint64_t>(fs.f_blocks - fs.f_bavail) * fs.f_bsize;
  return s;
}

std::string MetricsSampler::to_json(const MetricsSample& s) {
  nlohmann::json j{{"ts", s.ts},
                   {"cpu_count", s.cpu_count},
                   {"cpu_used_pct", s.cpu_used_pct},
                   {"mem_total_mib", s.mem_total / (1024 * 1024)},
                   {"mem_used_mib", s.mem_used / (1024 * 1024)},
                   {"mem_total", s.mem_total},
                   {"mem_used", s.mem_used},
                   {"mem_cache", s.mem_cache},
                   {"disk_used", s.disk_used},
                   {"disk_total", s.disk_total}};
  return j.dump();
}

}  // namespace cove::system
