// BashKernel against the real bash on this host.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>

#include "interpreter/bash_kernel.hpp"
#include "repl_kernel_fixture.hpp"

namespace cove::interpreter {
namespace {

using namespace std::chrono_literals;

using testing::Collected;

class BashKernelTest : public testing::ReplKernelFixture<BashKernel> {
 protected:
  BashKernelTest() : ReplKernelFixture("bash") {}
};

TEST_F(BashKernelTest, EchoGoesToStdout) {
  start();
  auto c = exec("echo hi");
  EXPECT_EQ(c.stream(false), "hi\n");
  EXPECT_EQ(c.count(), 1);
  EXPECT_FALSE(c.error());
  EXPECT_EQ(c.status(), ExecutionFinished::Status::ok);
  // As E2B's bash kernel (a pty): stderr is reported as stdout, in order.
  auto e = exec("echo one; echo two >&2; echo three");
  EXPECT_EQ(e.stream(false), "one\ntwo\nthree\n");
  EXPECT_EQ(e.stream(true), "");
  EXPECT_EQ(e.count(), 2);
}

TEST_F(BashKernelTest, VariablesFunctionsAndCdPersist) {
  start();
  exec("X=3");
  EXPECT_EQ(exec("echo $X").stream(false), "3\n");
  exec("cd /tmp");
  EXPECT_EQ(exec("pwd").stream(false), "/tmp\n");
  exec("greet() { echo \"hello $1\"; }\nexport EXPORTED=yes");
  EXPECT_EQ(exec("greet you; bash -c 'echo $EXPORTED'").stream(false), "hello you\nyes\n");
}

TEST_F(BashKernelTest, NonZeroStatusIsAnError) {
  start();
  auto c = exec("false");
  ASSERT_TRUE(c.error());
  EXPECT_EQ(c.error()->name, "");
  EXPECT_EQ(c.error()->value, "1");
  EXPECT_EQ(c.error()->traceback, "");
  EXPECT_EQ(c.status(), ExecutionFinished::Status::ok);
  auto d = exec("echo before; (exit 7)");
  EXPECT_EQ(d.stream(false), "before\n");
  ASSERT_TRUE(d.error());
  EXPECT_EQ(d.error()->value, "7");
  EXPECT_FALSE(exec("true").error());
}

TEST_F(BashKernelTest, UserCodeCannotTouchTheProtocol) {
  start();
  // stdin is /dev/null and the reply descriptor is closed inside a cell.
  auto c = exec("cat; read line; echo \"read=$?\"; echo 0 999 >&250; echo done");
  EXPECT_NE(c.stream(false).find("read=1\n"), std::string::npos) << c.stream(false);
  EXPECT_NE(c.stream(false).find("done\n"), std::string::npos);
  EXPECT_EQ(c.status(), ExecutionFinished::Status::ok);
  EXPECT_EQ(exec("echo still").stream(false), "still\n");
}

TEST_F(BashKernelTest, InterruptAbortsTheCellAndKeepsTheShell) {
  start();
  exec("X=kept");
  auto begin = std::chrono::steady_clock::now();
  auto c = exec("sleep 30; echo not-reached", false, 300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 3s);
  EXPECT_EQ(c.status(), ExecutionFinished::Status::aborted);
  EXPECT_FALSE(c.error());
  EXPECT_EQ(c.stream(false).find("not-reached"), std::string::npos);
  auto loop = exec("while true; do :; done", false, 300ms);
  EXPECT_EQ(loop.status(), ExecutionFinished::Status::aborted);
  EXPECT_EQ(exec("echo $X").stream(false), "kept\n");
}

TEST_F(BashKernelTest, ExitRestartsTheShell) {
  start();
  exec("X=3");
  auto c = exec("exit");
  EXPECT_EQ(c.status(), ExecutionFinished::Status::restarting);
  auto d = exec("echo \"x=$X\"");
  EXPECT_EQ(d.stream(false), "x=\n");
  EXPECT_EQ(d.status(), ExecutionFinished::Status::ok);
  EXPECT_EQ(d.count(), 1);
}

TEST_F(BashKernelTest, KilledShellRestarts) {
  start();
  auto c = exec("kill -9 $$");
  EXPECT_EQ(c.status(), ExecutionFinished::Status::restarting);
  EXPECT_EQ(exec("echo back").stream(false), "back\n");
}

TEST_F(BashKernelTest, SilentCellsRunInTheSameShell) {
  start();
  auto c = exec("export Y=5; cd /", true);
  EXPECT_EQ(c.events.size(), 1u);  // only ExecutionFinished
  EXPECT_EQ(c.status(), ExecutionFinished::Status::ok);
  auto d = exec("echo $Y; pwd");
  EXPECT_EQ(d.stream(false), "5\n/\n");
  EXPECT_EQ(d.count(), 1);
}

TEST_F(BashKernelTest, StatusOfThePreviousCellIsDollarQuestion) {
  start();
  exec("(exit 4)");
  EXPECT_EQ(exec("echo $?").stream(false), "4\n");
}

TEST_F(BashKernelTest, NonAsciiOutputIsIntact) {
  start();
  EXPECT_EQ(exec("echo 'héllo ✓ 日本'").stream(false), "héllo ✓ 日本\n");
}

TEST_F(BashKernelTest, RestartDropsState) {
  start();
  exec("X=1");
  run([this]() -> net::awaitable<void> { co_await kernel_->restart(); });
  EXPECT_EQ(exec("echo \"[$X]\"").stream(false), "[]\n");
}

TEST_F(BashKernelTest, ShutdownLeavesNoProcess) {
  start();
  auto c = exec("sleep 100 & echo $$ $!");
  int shell = 0, background = 0;
  ASSERT_EQ(std::sscanf(c.stream(false).c_str(), "%d %d", &shell, &background), 2) << c.stream(false);
  run([this]() -> net::awaitable<void> { co_await kernel_->shutdown(); });
  EXPECT_EQ(::kill(shell, 0), -1);
  // The background job was in the shell's process group: killed with it (reaped by the reaper).
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (::kill(background, 0) == 0 && std::chrono::steady_clock::now() < deadline) io_.run_one_for(20ms);
  EXPECT_EQ(::kill(background, 0), -1);
  kernel_.reset();
}

}  // namespace
}  // namespace cove::interpreter
