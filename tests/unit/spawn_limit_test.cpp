// The per-child RLIMIT_NPROC the agent applies (-process-limit): every child starts with it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "process/spawn.hpp"

namespace cove::process {
namespace {

std::string run_and_read(const SpawnSpec& spec) {
  int error = 0;
  SpawnedChild child = spawn_child(spec, &error);
  EXPECT_GT(child.pid, 0) << "spawn failed: " << error;
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = read(child.stdout_fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int status = 0;
  waitpid(child.pid, &status, 0);
  for (int fd : {child.stdin_fd, child.stdout_fd, child.stderr_fd}) {
    if (fd >= 0) close(fd);
  }
  return out;
}

SpawnSpec limit_probe() {
  SpawnSpec spec;
  spec.command = "/bin/sh";
  spec.args = {"-c", "awk '/Max processes/ {print $3}' /proc/self/limits"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.cwd = "/";
  spec.uid = 65534;  // as nobody: the limit matters for unprivileged uids
  spec.gid = 65534;
  spec.stdin_mode = StdinMode::null;
  return spec;
}

TEST(SpawnProcessLimit, ChildrenStartWithTheConfiguredLimit) {
  set_child_process_limit(123);
  EXPECT_EQ(run_and_read(limit_probe()), "123\n");
  set_child_process_limit(0);
  EXPECT_NE(run_and_read(limit_probe()), "123\n");  // 0: the agent's own limit is inherited
}

}  // namespace
}  // namespace cove::process
