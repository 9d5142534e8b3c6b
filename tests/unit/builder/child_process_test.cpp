#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "rootfs-builder/child_process.hpp"
#include "test_files.hpp"

namespace cove::builder {
namespace {

TEST(ChildProcess, ExitStatusAndOutputInTheLog) {
  test::TempDir tmp;
  std::atomic<bool> cancel{false};
  std::string log = tmp / "log";
  EXPECT_EQ(run_cancellable({"sh", "-c", "echo out; echo err >&2; exit 3"}, log, cancel), 3);
  EXPECT_EQ(test::read_file(log), "out\nerr\n");
  EXPECT_EQ(run_cancellable({"/nonexistent/program"}, log, cancel), -1);
}

TEST(ChildProcess, CancelEndsTheWholeProcessGroup) {
  test::TempDir tmp;
  std::atomic<bool> cancel{false};
  std::string log = tmp / "log";
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  auto started = std::chrono::steady_clock::now();
  // The grandchild (sleep) is in the same group: it must go too, not outlive the shim's stop.
  int rc = run_cancellable({"sh", "-c", "sleep 30 & echo $! > \"$0\"; wait", tmp / "grandchild"}, log, cancel);
  canceller.join();
  EXPECT_EQ(rc, 128 + SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  pid_t grandchild = std::stoi(test::read_file(tmp / "grandchild"));
  // Gone, or a zombie waiting for whoever reaps orphans here.
  auto gone_or_zombie = [grandchild] {
    std::string stat = test::read_file("/proc/" + std::to_string(grandchild) + "/stat");
    auto close = stat.rfind(')');
    return stat.empty() || (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z');
  };
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = gone_or_zombie();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "sleep " << grandchild << " outlived the cancel";
}

}  // namespace
}  // namespace cove::builder
