#pragma once
// The numbers behind GET /metrics (envd's field set): CPU use since the previous sample, memory
// from /proc/meminfo, disk from statfs("/").
#include <cstdint>
#include <optional>
#include <string>

namespace cove::system {

struct MetricsSample {
  int64_t ts = 0;
  int cpu_count = 0;
  double cpu_used_pct = 0;
  uint64_t mem_total = 0, mem_used = 0, mem_cache = 0;
  uint64_t disk_total = 0, disk_used = 0;
};

struct CpuTimes {
  uint64_t busy = 0, total = 0;
};

// Parses the aggregate "cpu" line of /proc/stat.
std::optional<CpuTimes> parse_proc_stat(const std::string& text);
// total/free/buffers/cached in bytes from /proc/meminfo (cached includes SReclaimable, as
// gopsutil reports it); used = total - free - buffers - cached.
struct MemInfo {
  uint64_t total = 0, free = 0, buffers = 0, cached = 0;
};
std::optional<MemInfo> parse_meminfo(const std::string& text);

class MetricsSampler {
 public:
  std::optional<MetricsSample> sample();
  static std::string to_json(const MetricsSample& s);

 private:
  CpuTimes last_{};
};

}  // namespace cove::system
