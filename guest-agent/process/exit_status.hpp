#pragma once
// How a process ended, in envd's terms (Go's ProcessState.String()): "exit status 1",
// "signal: killed"; exit code -1 for a signal death.
#include <optional>
#include <string>

namespace cove::process {

struct ExitInfo {
  int exit_code = 0;
  bool exited = false;
  std::string status;
  std::optional<std::string> error;  // absent for a clean exit 0
};

// From a waitpid() status.
ExitInfo describe_wait_status(int wait_status);
// Go's lowercase signal names ("killed", "terminated", "segmentation fault", ...).
std::string signal_description(int signo);

}  // namespace cove::process
