#include <gtest/gtest.h>

#include "runtime/container/cgroups.hpp"

namespace cove::shim::container {
namespace {

// This build machine's table: v1 controllers each on their own mount, cgroup2 at unified/.
constexpr const char* kHybrid =
    "21 26 0:20 / /proc rw,relatime - proc proc rw\n"
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "36 30 0:33 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

// systemd's pure v2 host, with an optional field (shared:) before the separator.
constexpr const char* kPureV2 =
    "25 30 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

}  // namespace

TEST(CgroupLayout, DetectsHybrid) {
  CgroupLayout l = parse_cgroup_layout(kHybrid, "hugetlb\n");
  EXPECT_FALSE(l.pure_v2());
  EXPECT_EQ(l.unified, "/sys/fs/cgroup/unified");
  EXPECT_EQ(l.v1.at("memory"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(l.v1.at("cpu"), "/sys/fs/cgroup/cpu");
  EXPECT_EQ(l.v1.at("cpuacct"), "/sys/fs/cgroup/cpuacct");
  EXPECT_EQ(l.v1.at("pids"), "/sys/fs/cgroup/pids");
  EXPECT_EQ(l.v1.at("freezer"), "/sys/fs/cgroup/freezer");
  EXPECT_EQ(l.v1.count("systemd"), 0u);

  CgroupPlan p = plan_cgroups(l, "sb1");
  EXPECT_FALSE(p.v2);
  EXPECT_EQ(p.unified, "/sys/fs/cgroup/unified/cove/sb1");
  EXPECT_EQ(p.memory, "/sys/fs/cgroup/memory/cove/sb1");
  EXPECT_EQ(p.cpuacct, "/sys/fs/cgroup/cpuacct/cove/sb1");
  EXPECT_EQ(p.groups().size(), 6u);
}

TEST(CgroupLayout, DetectsPureV2) {
  CgroupLayout l = parse_cgroup_layout(kPureV2, "cpuset cpu io memory hugetlb pids rdma misc\n");
  EXPECT_TRUE(l.pure_v2());
  CgroupPlan p = plan_cgroups(l, "sb2");
  EXPECT_TRUE(p.v2);
  EXPECT_EQ(p.unified, "/sys/fs/cgroup/cove/sb2");
  EXPECT_TRUE(p.memory.empty());
  EXPECT_EQ(p.groups(), std::vector<std::string>{"/sys/fs/cgroup/cove/sb2"});
}

TEST(CgroupLayout, CoMountedCpuAndCpuacctShareOneGroup) {
  const char* table =
      "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
      "34 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
      "38 30 0:35 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
  CgroupLayout l = parse_cgroup_layout(table, "");
  EXPECT_TRUE(l.unified.empty());
  CgroupPlan p = plan_cgroups(l, "x");
  EXPECT_EQ(p.cpu, p.cpuacct);
  EXPECT_EQ(p.cpu, "/sys/fs/cgroup/cpu,cpuacct/cove/x");
  EXPECT_TRUE(p.unified.empty());
  EXPECT_EQ(p.groups().size(), 3u);  // cpu and cpuacct counted once
}

TEST(CgroupLayout, UnescapesMountPoints) {
  const char* table =
      "34 30 0:31 / /cg\\040root/memory rw - cgroup cgroup rw,memory\n"
      "35 30 0:32 / /cg\\040root/cpu rw - cgroup cgroup rw,cpu\n"
      "36 30 0:33 / /cg\\040root/pids rw - cgroup cgroup rw,pids\n";
  CgroupLayout l = parse_cgroup_layout(table, "");
  EXPECT_EQ(l.v1.at("memory"), "/cg root/memory");
}

TEST(CgroupLayout, V2WithoutMemoryIsNotPureV2) {
  // cgroup2 at the root but memory still bound to v1 elsewhere, or missing from controllers.
  CgroupLayout l = parse_cgroup_layout(kPureV2, "cpu pids\n");
  EXPECT_FALSE(l.pure_v2());
  EXPECT_THROW(plan_cgroups(l, "x"), std::runtime_error);
}

TEST(CgroupLayout, PureV2NeedsCpuAndPids) {
  CgroupLayout l = parse_cgroup_layout(kPureV2, "memory io\n");
  EXPECT_TRUE(l.pure_v2());
  EXPECT_THROW(plan_cgroups(l, "x"), std::runtime_error);
}

TEST(CgroupLayout, NothingUsable) {
  EXPECT_THROW(plan_cgroups(parse_cgroup_layout("", ""), "x"), std::runtime_error);
  EXPECT_THROW(plan_cgroups(parse_cgroup_layout("garbage line\n\n- - -\n", ""), "x"), std::runtime_error);
}

TEST(CgroupStats, ParsesCpuStatUsage) {
  EXPECT_EQ(parse_cpu_stat_usage_usec("usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n"), 1234u);
  EXPECT_EQ(parse_cpu_stat_usage_usec("user_usec 1\n"), 0u);
  EXPECT_EQ(parse_cpu_stat_usage_usec(""), 0u);
}

TEST(CgroupEvents, FrozenState) {
  EXPECT_EQ(parse_cgroup_events_frozen("populated 1\nfrozen 1\n"), std::optional<bool>(true));
  EXPECT_EQ(parse_cgroup_events_frozen("populated 1\nfrozen 0\n"), std::optional<bool>(false));
  EXPECT_EQ(parse_cgroup_events_frozen("populated 0\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_events_frozen(""), std::nullopt);
}

}  // namespace cove::shim::container
