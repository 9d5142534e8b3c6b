// waitpid() status → envd's EndEvent fields (Go's ProcessState.String()).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include "process/exit_status.hpp"

using cove::process::describe_wait_status;
using cove::process::signal_description;

namespace {
// The raw encodings, spelled out so they do not depend on the macros under test.
int exited_with(int code) { return W_EXITCODE(code, 0); }
int killed_by(int sig) { return W_EXITCODE(0, sig); }
int killed_with_core(int sig) { return W_EXITCODE(0, sig) | WCOREFLAG; }
}  // namespace

TEST(ExitStatus, RawEncodingSanity) {
  EXPECT_EQ(exited_with(1), 0x100);
  EXPECT_EQ(killed_by(SIGKILL), 9);
  EXPECT_EQ(killed_with_core(SIGSEGV), 0x8b);
}

TEST(ExitStatus, CleanExitHasNoError) {
  auto info = describe_wait_status(exited_with(0));
  EXPECT_EQ(info.exit_code, 0);
  EXPECT_TRUE(info.exited);
  EXPECT_EQ(info.status, "exit status 0");
  EXPECT_FALSE(info.error.has_value());
}

TEST(ExitStatus, NonZeroExit) {
  auto one = describe_wait_status(exited_with(1));
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_TRUE(one.exited);
  EXPECT_EQ(one.status, "exit status 1");
  EXPECT_EQ(one.error, "exit status 1");

  auto e127 = describe_wait_status(exited_with(127));
  EXPECT_EQ(e127.exit_code, 127);
  EXPECT_EQ(e127.status, "exit status 127");
  EXPECT_EQ(e127.error, "exit status 127");

  auto e255 = describe_wait_status(exited_with(255));
  EXPECT_EQ(e255.exit_code, 255);
  EXPECT_EQ(e255.status, "exit status 255");
}

TEST(ExitStatus, Sigkill) {
  auto info = describe_wait_status(killed_by(SIGKILL));
  EXPECT_EQ(info.exit_code, -1);
  EXPECT_FALSE(info.exited);
  EXPECT_EQ(info.status, "signal: killed");
  EXPECT_EQ(info.error, "signal: killed");
}

TEST(ExitStatus, Sigterm) {
  auto info = describe_wait_status(killed_by(SIGTERM));
  EXPECT_EQ(info.exit_code, -1);
  EXPECT_FALSE(info.exited);
  EXPECT_EQ(info.status, "signal: terminated");
  EXPECT_EQ(info.error, "signal: terminated");
}

TEST(ExitStatus, CoreDumpSuffix) {
  auto info = describe_wait_status(killed_with_core(SIGSEGV));
  EXPECT_EQ(info.exit_code, -1);
  EXPECT_FALSE(info.exited);
  EXPECT_EQ(info.status, "signal: segmentation fault (core dumped)");
  EXPECT_EQ(info.error, "signal: segmentation fault (core dumped)");
  EXPECT_EQ(describe_wait_status(killed_with_core(SIGABRT)).status, "signal: aborted (core dumped)");
  // No suffix without the core flag.
  EXPECT_EQ(describe_wait_status(killed_by(SIGSEGV)).status, "signal: segmentation fault");
}

TEST(ExitStatus, GoSignalNames) {
  // Go's syscall signal table on Linux.
  EXPECT_EQ(signal_description(SIGHUP), "hangup");
  EXPECT_EQ(signal_description(SIGINT), "interrupt");
  EXPECT_EQ(signal_description(SIGQUIT), "quit");
  EXPECT_EQ(signal_description(SIGILL), "illegal instruction");
  EXPECT_EQ(signal_description(SIGTRAP), "trace/breakpoint trap");
  EXPECT_EQ(signal_description(SIGABRT), "aborted");
  EXPECT_EQ(signal_description(SIGBUS), "bus error");
  EXPECT_EQ(signal_description(SIGFPE), "floating point exception");
  EXPECT_EQ(signal_description(SIGKILL), "killed");
  EXPECT_EQ(signal_description(SIGUSR1), "user defined signal 1");
  EXPECT_EQ(signal_description(SIGSEGV), "segmentation fault");
  EXPECT_EQ(signal_description(SIGUSR2), "user defined signal 2");
  EXPECT_EQ(signal_description(SIGPIPE), "broken pipe");
  EXPECT_EQ(signal_description(SIGALRM), "alarm clock");
  EXPECT_EQ(signal_description(SIGTERM), "terminated");
  EXPECT_EQ(signal_description(SIGCHLD), "child exited");
  EXPECT_EQ(signal_description(SIGXCPU), "CPU time limit exceeded");
  EXPECT_EQ(signal_description(SIGWINCH), "window changed");
  EXPECT_EQ(signal_description(SIGSYS), "bad system call");
  // Outside the table: Go prints "signal N".
  EXPECT_EQ(signal_description(0), "signal 0");
  EXPECT_EQ(signal_description(34), "signal 34");
  EXPECT_EQ(signal_description(64), "signal 64");
  EXPECT_EQ(describe_wait_status(killed_by(40)).status, "signal: signal 40");
}
