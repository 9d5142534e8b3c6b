#include <gtest/gtest.h>

#include "runtime/container/launch_spec.hpp"

namespace cove::shim::container {

TEST(LaunchSpec, RoundTripsEveryField) {
  LaunchSpec s;
  s.id = "isb-1";
  s.sandbox_dir = "/var/lib/cove/sandboxes/isb-1";
  s.layers = {"/layers/agent", "/layers/base"};
  s.id_base = 165536;
  s.id_count = 65536;
  s.cgroups.v2 = false;
  s.cgroups.unified = "/sys/fs/cgroup/unified/cove/isb-1";
  s.cgroups.memory = "/sys/fs/cgroup/memory/cove/isb-1";
  s.cgroups.cpu = "/sys/fs/cgroup/cpu/cove/isb-1";
  s.cgroups.cpuacct = "/sys/fs/cgroup/cpuacct/cove/isb-1";
  s.cgroups.pids = "/sys/fs/cgroup/pids/cove/isb-1";
  s.cgroups.freezer = "/sys/fs/cgroup/freezer/cove/isb-1";
  s.limits = {512ull << 20, 200000, 100000, 4096};
  s.internet = true;
  s.slot = 1;
  s.bridge = "cove0";
  s.subnet = "10.88.0.0/16";
  s.address = "10.88.0.3";
  s.gateway = "10.88.0.1";
  s.prefix_length = 16;
  s.agent_path = "/usr/local/bin/cove-agent";
  s.agent_port = 49983;
  s.agent_socket = "/run/cove/agent.sock";

  LaunchSpec r = launch_spec_from_json(to_json(s));
  EXPECT_EQ(r.id, s.id);
  EXPECT_EQ(r.sandbox_dir, s.sandbox_dir);
  EXPECT_EQ(r.layers, s.layers);
  EXPECT_EQ(r.id_base, s.id_base);
  EXPECT_EQ(r.id_count, s.id_count);
  EXPECT_EQ(r.cgroups.v2, s.cgroups.v2);
  EXPECT_EQ(r.cgroups.groups(), s.cgroups.groups());
  EXPECT_EQ(r.cgroups.freezer, s.cgroups.freezer);
  EXPECT_EQ(r.limits.memory_bytes, s.limits.memory_bytes);
  EXPECT_EQ(r.limits.cpu_quota_us, 200000);
  EXPECT_EQ(r.limits.cpu_period_us, 100000);
  EXPECT_EQ(r.limits.pids_max, 4096);
  EXPECT_TRUE(r.internet);
  EXPECT_EQ(r.slot, 1);
  EXPECT_EQ(r.bridge, "cove0");
  EXPECT_EQ(r.subnet, "10.88.0.0/16");
  EXPECT_EQ(r.address, "10.88.0.3");
  EXPECT_EQ(r.gateway, "10.88.0.1");
  EXPECT_EQ(r.prefix_length, 16);
  EXPECT_EQ(r.agent_path, s.agent_path);
  EXPECT_EQ(r.agent_port, 49983);
  EXPECT_EQ(r.agent_socket, s.agent_socket);
}

TEST(LaunchSpec, RejectsMalformedInput) {
  EXPECT_THROW(launch_spec_from_json(""), std::invalid_argument);
  EXPECT_THROW(launch_spec_from_json("{"), std::invalid_argument);
  EXPECT_THROW(launch_spec_from_json("{\"id\":\"x\"}"), std::invalid_argument);
  LaunchSpec s;
  s.id = "x";
  s.sandbox_dir = "/d";
  s.id_count = 65536;
  // No layers: nothing to boot.
  EXPECT_THROW(launch_spec_from_json(to_json(s)), std::invalid_argument);
  s.layers = {"/l"};
  EXPECT_NO_THROW(launch_spec_from_json(to_json(s)));
  std::string wrong_type = to_json(s);
  wrong_type.replace(wrong_type.find("\"slot\":0"), 8, "\"slot\":\"0\"");
  EXPECT_THROW(launch_spec_from_json(wrong_type), std::invalid_argument);
}

TEST(LaunchReport, ParsesOkAndError) {
  auto ok = parse_launch_report(format_launch_ok(4242, 7));
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->ok);
  EXPECT_EQ(ok->pid, 4242);
  EXPECT_EQ(ok->loop, 7);
  auto build = parse_launch_report(format_launch_ok(4242, -1));  // a build sandbox has no disk
  ASSERT_TRUE(build);
  EXPECT_EQ(build->loop, -1);

  auto err = parse_launch_report(format_launch_error("mount overlay: Invalid argument\nsecond line"));
  ASSERT_TRUE(err);
  EXPECT_FALSE(err->ok);
  EXPECT_EQ(err->error, "mount overlay: Invalid argument second line");
}

TEST(LaunchReport, RejectsTruncatedOrGarbage) {
  EXPECT_FALSE(parse_launch_report(""));
  EXPECT_FALSE(parse_launch_report("OK 12 3"));     // no newline: the launcher died mid-line
  EXPECT_FALSE(parse_launch_report("OK 12\n"));
  EXPECT_FALSE(parse_launch_report("OK 0 1\n"));
  EXPECT_FALSE(parse_launch_report("OK -5 1\n"));
  EXPECT_FALSE(parse_launch_report("OK 12 x\n"));
  EXPECT_FALSE(parse_launch_report("OK 12 -2\n"));
  EXPECT_FALSE(parse_launch_report("OK 12 3 4\n"));
  EXPECT_FALSE(parse_launch_report("HELLO\n"));
}

TEST(LaunchSpec, RestoreFieldsRoundTripAndNeedCriu) {
  LaunchSpec s;
  s.id = "isb-2";
  s.sandbox_dir = "/sb";
  s.layers = {"/l"};
  s.id_count = 65536;
  s.checkpoint_dir = "/ck";
  s.criu_path = "/opt/criu";
  s.stdout_key = "file[2b:10]";
  LaunchSpec back = launch_spec_from_json(to_json(s));
  EXPECT_EQ(back.checkpoint_dir, "/ck");
  EXPECT_EQ(back.criu_path, "/opt/criu");
  EXPECT_EQ(back.stdout_key, "file[2b:10]");
  s.criu_path.clear();
  EXPECT_THROW(launch_spec_from_json(to_json(s)), std::invalid_argument);
}

TEST(LaunchReport, RestoringCarriesTheLoopDevice) {
  auto r = parse_launch_report(format_launch_restoring(3));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ok);
  EXPECT_TRUE(r->restoring);
  EXPECT_EQ(r->pid, 0);
  EXPECT_EQ(r->loop, 3);
  EXPECT_FALSE(parse_launch_report("RESTORING \n"));
  EXPECT_FALSE(parse_launch_report("RESTORING x\n"));
  EXPECT_FALSE(parse_launch_report("RESTORING 3"));
  auto ok = parse_launch_report(format_launch_ok(10, 1));
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->restoring);
}

}  // namespace cove::shim::container
