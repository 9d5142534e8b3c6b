#pragma once
// A long-running helper program (debootstrap) the shim must be able to stop: run in a process
// group of its own, output to a log file, ended (TERM, then KILL after 5 s) once `cancel` is set.
#include <atomic>
#include <string>
#include <vector>

namespace cove::builder {

// The exit status, 128 + signal when killed, -1 when it could not start. PATH is the system's.
int run_cancellable(std::vector<std::string> argv, const std::string& log_path, const std::atomic<bool>& cancel);

}  // namespace cove::builder
