#pragma once
// A language kernel behind one interface: the Jupyter wire client (python, r) and the agent's own
// persistent REPL backends (javascript/typescript, bash) all report an execution as the same
// event sequence, which interpreter/execution turns into E2B's NDJSON lines.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "process/registry.hpp"

namespace cove::interpreter {

namespace net = boost::asio;

// The kernel accepted the cell (Jupyter execute_input).
struct ExecutionStarted {
  int64_t execution_count = 0;
};

// A chunk of stdout or stderr. `timestamp` is ISO 8601 with offset (the kernel's message date,
// e.g. 2026-11-30T06:53:49.077610+00:00).
struct StreamOutput {
  bool is_stderr = false;
  std::string text;
  std::string timestamp;
};

// A MIME bundle: execute_result (main) or display_data.
struct DisplayOutput {
  nlohmann::json data = nlohmann::json::object();
  bool is_main_result = false;
};

// A kernel-reported error; `traceback` already joined (Jupyter's list concatenated with "").
struct ExecutionFailed {
  std::string name;
  std::string value;
  std::string traceback;
};

// The last event of every execution. A kernel reports at most one ExecutionFailed per cell (an
// iopub error and an error execute_reply are the same error).
struct ExecutionFinished {
  enum class Status {
    ok,          // the kernel went idle after the cell (errors came as ExecutionFailed)
    aborted,     // the kernel aborted the cell (E2B: ExecutionAborted)
    restarting,  // the kernel died during the cell and is being restarted (ContextRestarting)
    lost,        // the connection to the kernel broke (UnexpectedEndOfExecution)
  };
  Status status = Status::ok;
};

using ExecutionEvent =
    std::variant<ExecutionStarted, StreamOutput, DisplayOutput, ExecutionFailed, ExecutionFinished>;
using EventSink = std::function<void(ExecutionEvent)>;

// How to start a kernel: the context's language and working directory plus the process env.
struct KernelLaunch {
  std::string language;               // normalized: python, javascript, typescript, bash, r
  std::string cwd;                    // the kernel process starts here (survives restarts)
  std::vector<std::string> env;       // "KEY=value" for the kernel process
  std::string runtime_dir;            // agent-owned scratch dir (connection files, scripts)
};

class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a kernel needs from the agent to run processes: the reaper collects every child, so a
// kernel learns of its process's exit through processes->watch_exit.
struct KernelServices {
  net::any_io_executor executor;
  process::Registry* processes = nullptr;
};

// All members run on the agent's single io_context thread. If the process dies by itself, a
// pending execute finishes with Status::restarting and the kernel starts a new process on its own
// (as Jupyter's restarter does); state is then gone.
class Kernel {
 public:
  virtual ~Kernel() = default;

  // Starts the kernel process and returns once it answers requests. Throws KernelError.
  virtual net::awaitable<void> start() = 0;

  // Runs one cell; delivers its events through `sink` in order and returns after the final
  // ExecutionFinished. One execution at a time (the caller serializes). `silent` cells (cwd and
  // env-var bookkeeping) produce no ExecutionStarted and do not count as executions.
  virtual net::awaitable<void> execute(std::string code, bool silent, EventSink sink) = 0;

  // Interrupts the running cell (SIGINT or interrupt_request); the kernel stays usable.
  virtual void interrupt() = 0;

  // Stops the process and starts a fresh one in the same cwd: all state is gone. A pending
  // execute finishes with Status::restarting. Throws KernelError if the new one does not answer.
  virtual net::awaitable<void> restart() = 0;

  // Stops the process for good (graceful request, then SIGKILL).
  virtual net::awaitable<void> shutdown() = 0;
};

}  // namespace cove::interpreter
