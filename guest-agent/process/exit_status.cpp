#include "process/exit_status.hpp"

#include <sys/wait.h>

namespace cove::process {

std::string signal_description(int signo) {
  static const char* const kNames[] = {
      nullptr, "hangup", "interrupt", "quit", "illegal instruction", "trace/breakpoint trap",
      "aborted", "bus error", "floating point exception", "killed", "user defined signal 1",
      "segmentation fault", "user defined signal 2", "broken pipe", "alarm clock", "terminated",
      "stack fault", "child exited", "continued", "stopped (signal)", "stopped",
      "stopped (tty input)", "stopped (tty output)", "urgent I/O condition",
      "CPU time limit exceeded", "file size limit exceeded", "virtual timer expired",
      "profiling timer expired", "window changed", "I/O possible", "power failure",
      "bad system call"};
  if (signo > 0 && signo < static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[signo];
  return "signal " + std::to_string(signo);
}

ExitInfo describe_wait_status(int wait_status) {
  ExitInfo info;
  if (WIFEXITED(wait_status)) {
    info.exited = true;
    info.exit_code = WEXITSTATUS(wait_status);
    info.status = "exit status " + std::to_string(info.exit_code);
  } else if (WIFSIGNALED(wait_status)) {
    info.exited = false;
    info.exit_code = -1;
    info.status = "signal: " + signal_description(WTERMSIG(wait_status));
    if (WCOREDUMP(wait_status)) info.status += " (core dumped)";
  } else {
    info.exit_code = -1;
    info.status = "unknown wait status " + std::to_string(wait_status);
  }
  if (!(info.exited && info.exit_code == 0)) info.error = info.status;
  return info;
}

}  // namespace cove::process
