#include <gtest/gtest.h>

#include <unistd.h>

#include "runtime/container/instance.hpp"

namespace cove::shim::container {

TEST(InstanceRecord, RoundTrips) {
  InstanceRecord r;
  r.id = "sb";
  r.slot = 3;
  r.pid = 1234;
  r.start_time = 987654321;
  r.loop = 5;
  r.internet = true;
  r.cpu_count = 2;
  r.cgroups.v2 = true;
  r.cgroups.unified = "/sys/fs/cgroup/cove/sb";
  r.layers = {"/a", "/b"};
  InstanceRecord b = instance_from_json(to_json(r));
  EXPECT_EQ(b.id, "sb");
  EXPECT_EQ(b.slot, 3);
  EXPECT_EQ(b.pid, 1234);
  EXPECT_EQ(b.start_time, 987654321u);
  EXPECT_EQ(b.loop, 5);
  EXPECT_TRUE(b.internet);
  EXPECT_EQ(b.cpu_count, 2);
  EXPECT_TRUE(b.cgroups.v2);
  EXPECT_EQ(b.cgroups.unified, r.cgroups.unified);
  EXPECT_EQ(b.layers, r.layers);
  EXPECT_THROW(instance_from_json("{}"), std::invalid_argument);
  EXPECT_THROW(instance_from_json("not json"), std::invalid_argument);
}

TEST(ProcStat, StartTimeSkipsTheCommandName) {
  // comm may hold spaces and parentheses; fields are counted from the last ')'.
  std::string stat =
      "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 55555 1000 10 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
  EXPECT_EQ(parse_stat_start_time(stat), 55555u);
  EXPECT_FALSE(parse_stat_start_time("4242 (x) S 1 2\n"));
  EXPECT_FALSE(parse_stat_start_time("no paren"));
}

TEST(ProcStat, OwnStartTimeIsStable) {
  auto a = process_start_time(getpid());
  ASSERT_TRUE(a);
  EXPECT_EQ(process_start_time(getpid()), a);
  EXPECT_FALSE(process_start_time(-1));
}

}  // namespace cove::shim::container
