// GET /metrics inputs: /proc/stat and /proc/meminfo parsing, and the JSON field set.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "system/metrics.hpp"

using cove::system::MetricsSample;
using cove::system::MetricsSampler;
using cove::system::parse_meminfo;
using cove::system::parse_proc_stat;

TEST(Metrics, ProcStatAggregateLine) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  auto t = parse_proc_stat("cpu  100 20 30 400 50 6 7 8 90 10\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->total, 100u + 20 + 30 + 400 + 50 + 6 + 7 + 8);  // guest is already inside user/nice
  EXPECT_EQ(t->busy, t->total - 400 - 50);                     // idle and iowait are not busy
}

TEST(Metrics, ProcStatShortAndInvalid) {
  auto four = parse_proc_stat("cpu 1 2 3 4\n");
  ASSERT_TRUE(four.has_value());
  EXPECT_EQ(four->total, 10u);
  EXPECT_EQ(four->busy, 6u);
  EXPECT_FALSE(parse_proc_stat("").has_value());
  EXPECT_FALSE(parse_proc_stat("cpu0 1 2 3 4 5\n").has_value());
  EXPECT_FALSE(parse_proc_stat("cpu 1 2 3\n").has_value());
  EXPECT_FALSE(parse_proc_stat("intr 1 2 3 4 5\n").has_value());
}

TEST(Metrics, Meminfo) {
  auto m = parse_meminfo(
      "MemTotal:        2048000 kB\n"
      "MemFree:          512000 kB\n"
      "MemAvailable:    1024000 kB\n"
      "Buffers:           10000 kB\n"
      "Cached:           300000 kB\n"
      "SwapCached:            0 kB\n"
      "HugePages_Total:       0\n");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->total, 2048000ull * 1024);
  EXPECT_EQ(m->free, 512000ull * 1024);
  EXPECT_EQ(m->buffers, 10000ull * 1024);
  EXPECT_EQ(m->cached, 300000ull * 1024);  // not SwapCached
  EXPECT_FALSE(parse_meminfo("MemFree: 1 kB\n").has_value());
  EXPECT_FALSE(parse_meminfo("").has_value());
}

TEST(Metrics, JsonFieldSet) {
  MetricsSample s;
  s.ts = 1767225600;
  s.cpu_count = 2;
  s.cpu_used_pct = 12.5;
  s.mem_total = 3ull << 30;
  s.mem_used = 1ull << 30;
  s.mem_cache = 5;
  s.disk_total = 1000;
  s.disk_used = 400;
  auto j = nlohmann::json::parse(MetricsSampler::to_json(s));
  EXPECT_EQ(j.at("ts"), 1767225600);
  EXPECT_EQ(j.at("cpu_count"), 2);
  EXPECT_DOUBLE_EQ(j.at("cpu_used_pct").get<double>(), 12.5);
  EXPECT_EQ(j.at("mem_total_mib"), 3072);
  EXPECT_EQ(j.at("mem_used_mib"), 1024);
  EXPECT_EQ(j.at("mem_total"), 3ull << 30);
  EXPECT_EQ(j.at("mem_used"), 1ull << 30);
  EXPECT_EQ(j.at("mem_cache"), 5);
  EXPECT_EQ(j.at("disk_used"), 400);
  EXPECT_EQ(j.at("disk_total"), 1000);
  EXPECT_EQ(j.size(), 10u);
}

TEST(Metrics, LiveSampleIsSane) {
  MetricsSampler sampler;
  auto a = sampler.sample();
  ASSERT_TRUE(a.has_value());
  EXPECT_GT(a->cpu_count, 0);
  EXPECT_GT(a->mem_total, 0u);
  EXPECT_LE(a->mem_used, a->mem_total);
  EXPECT_GT(a->disk_total, 0u);
  EXPECT_LE(a->disk_used, a->disk_total);
  auto b = sampler.sample();
  ASSERT_TRUE(b.has_value());
  EXPECT_GE(b->cpu_used_pct, 0.0);
  EXPECT_LE(b->cpu_used_pct, 100.0);
}
