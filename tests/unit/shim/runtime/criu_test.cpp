#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/container/criu.hpp"

namespace cove::shim::container {
namespace {

bool has_pair(const std::vector<std::string>& a, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < a.size(); ++i) {
    if (a[i] == flag && a[i + 1] == value) return true;
  }
  return false;
}
bool has(const std::vector<std::string>& a, const std::string& flag) {
  return std::find(a.begin(), a.end(), flag) != a.end();
}

TEST(Criu, ExternalFileKeyIsHexMountAndInode) {
  EXPECT_EQ(criu_external_file_key(43, 11002426), "file[2b:a7e23a]");
  EXPECT_EQ(criu_external_file_key(0, 0), "file[0:0]");
}

TEST(Criu, MountIdFromFdinfo) {
  EXPECT_EQ(parse_fdinfo_mnt_id("pos:\t14\nflags:\t0102001\nmnt_id:\t43\nino:\t11002426\n"), 43);
  EXPECT_EQ(parse_fdinfo_mnt_id("mnt_id: 7\n"), 7);
  EXPECT_EQ(parse_fdinfo_mnt_id("pos:\t0\nflags:\t02\n"), -1);
  EXPECT_EQ(parse_fdinfo_mnt_id("pos:\t0\nmnt_id:\tx\n"), -1);
  EXPECT_EQ(parse_fdinfo_mnt_id("xmnt_id:\t5\n"), -1);  // only at the start of a line
}

TEST(Criu, DumpArgv) {
  CriuDump d;
  d.criu = "/opt/criu";
  d.pid = 4242;
  d.images_dir = "/ck";
  d.log_file = "/ck/dump.log";
  d.freeze_cgroup = "/sys/fs/cgroup/unified/cove/x";
  d.stdout_key = "file[2b:10]";
  auto a = criu_dump_argv(d);
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[0], "/opt/criu");
  EXPECT_EQ(a[1], "dump");
  EXPECT_TRUE(has_pair(a, "--tree", "4242"));
  EXPECT_TRUE(has_pair(a, "--images-dir", "/ck"));
  EXPECT_TRUE(has_pair(a, "--log-file", "/ck/dump.log"));
  EXPECT_TRUE(has_pair(a, "--freeze-cgroup", "/sys/fs/cgroup/unified/cove/x"));
  EXPECT_TRUE(has_pair(a, "--external", "mnt[/dev/null]:dev_null"));
  EXPECT_TRUE(has_pair(a, "--external", "mnt[/dev/tty]:dev_tty"));
  EXPECT_TRUE(has_pair(a, "--external", "file[2b:10]"));
  EXPECT_TRUE(has(a, "--manage-cgroups=ignore"));
  EXPECT_TRUE(has(a, "--tcp-established"));
  EXPECT_FALSE(has(a, "--leave-running"));
  d.leave_running = true;
  EXPECT_TRUE(has(criu_dump_argv(d), "--leave-running"));
  d.stdout_key.clear();
  d.freeze_cgroup.clear();
  auto bare = criu_dump_argv(d);
  EXPECT_FALSE(has(bare, "--freeze-cgroup"));
  EXPECT_FALSE(has_pair(bare, "--external", ""));
}

TEST(Criu, RestoreArgv) {
  CriuRestore r;
  r.criu = "/opt/criu";
  r.images_dir = "/ck";
  r.log_file = "/sb/restore.log";
  r.root = "/sb/rootfs";
  r.pidfile = "/sb/restored.pid";
  r.stdout_fd = 5;
  r.stdout_key = "file[2b:10]";
  auto a = criu_restore_argv(r);
  EXPECT_EQ(a[1], "restore");
  EXPECT_TRUE(has_pair(a, "--images-dir", "/ck"));
  EXPECT_TRUE(has_pair(a, "--root", "/sb/rootfs"));
  EXPECT_TRUE(has_pair(a, "--pidfile", "/sb/restored.pid"));
  EXPECT_TRUE(has_pair(a, "--inherit-fd", "fd[5]:file[2b:10]"));
  EXPECT_TRUE(has_pair(a, "--external", "mnt[dev_urandom]:/dev/urandom"));
  EXPECT_TRUE(has(a, "--restore-sibling"));
  EXPECT_TRUE(has(a, "--restore-detached"));
  EXPECT_TRUE(has(a, "--manage-cgroups=ignore"));
  r.stdout_fd = -1;
  EXPECT_FALSE(has(criu_restore_argv(r), "--inherit-fd"));
}

TEST(Criu, FailureReasonNamesKnownCasesWithoutHostPaths) {
  const std::string rlimit = "(00.046612) Error (criu/util.c:1534): rlimit: Can't setup RLIMIT_NOFILE for self: Operation not permitted\n";
  EXPECT_EQ(criu_failure_reason(rlimit + "(00.068432) Error (criu/proc_parse.c:502): Unknown shit 600 (anon_inode:[io_uring])\n"),
            "a process uses io_uring, which cannot be checkpointed");
  EXPECT_EQ(criu_failure_reason(rlimit + "(00.1) Error (criu/sk-unix.c:351): unix: Unix socket 74767 not found\n"),
            "a Unix socket is connected to something outside the sandbox");
  std::string outside = criu_failure_reason(
      "(00.2) Error (criu/files-reg.c:1790): Can't lookup mount=43 for fd=1 path=/tmp/state/sandboxes/x/agent.log\n");
  EXPECT_EQ(outside, "a process holds a file from outside the sandbox's filesystem");
  EXPECT_EQ(criu_failure_reason("(00.3)      1: Error (criu/cr-restore.c:1230): Can't fork for 30681: File exists\n"),
            "the sandbox's process ids are still in use");
}

TEST(Criu, FailureReasonOtherwiseScrubsTheFirstError) {
  std::string reason = criu_failure_reason(
      "(00.1) Warn  (criu/kerndat.c:1): whatever\n"
      "(00.2)      1: Error (criu/files-reg.c:2353): Can't open file /var/lib/cove/x/y on restore: Permission denied\n"
      "(00.3) Error (criu/cr-restore.c:2331): Restoring FAILED.\n");
  EXPECT_EQ(reason, "Can't open file <path> on restore: Permission denied");
  EXPECT_EQ(reason.find("/var"), std::string::npos);
  EXPECT_EQ(reason.find("criu/"), std::string::npos);
  EXPECT_EQ(criu_failure_reason(""), "checkpoint/restore failed (no reason given)");
  EXPECT_EQ(criu_failure_reason("(00.1) Error (criu/util.c:1534): rlimit: Can't setup RLIMIT_NOFILE for self\n"),
            "checkpoint/restore failed (no reason given)");
}

}  // namespace
}  // namespace cove::shim::container
