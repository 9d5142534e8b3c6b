#pragma once
// The state machine shared by the agent's own REPL kernels (node_repl_kernel, bash_kernel): one
// ReplProcess at a time, one cell at a time, user output streamed while the cell runs, the
// cell's end reported after its output, interrupts that escalate, and a restart of its own when
// the process dies. A subclass only says how to start its REPL and how its protocol looks.
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <string>

#include "async/event.hpp"
#include "interpreter/kernel.hpp"
#include "interpreter/repl_process.hpp"

namespace cove::interpreter {

class ReplKernel : public Kernel {
 public:
  ReplKernel(KernelLaunch launch, KernelServices services);
  ~ReplKernel() override;

  net::awaitable<void> start() override;
  net::awaitable<void> execute(std::string code, bool silent, EventSink sink) override;
  void interrupt() override;
  net::awaitable<void> restart() override;
  net::awaitable<void> shutdown() override;

 protected:
  // One line of the reply channel, as the subclass reads it.
  struct Reply {
    enum class Kind { ignore, ready, result, error, done, fatal };
    Kind kind = Kind::ignore;
    int64_t id = 0;            // the cell it belongs to (result, error, done)
    nlohmann::json data;       // result: the MIME bundle
    ExecutionFailed error;     // error
    std::string message;       // fatal: why the REPL cannot work
    int status = 0;            // done: non-zero → ExecutionFailed{"", "<status>", ""}
  };

  // Prepares files the REPL needs and says how to start it. Throws KernelError.
  virtual ReplProcessSpec prepare() = 0;
  // Bytes written to the request channel right after the start (bash's setup line).
  virtual std::string setup_request() { return {}; }
  // Bytes that run cell `id`. Throws KernelError.
  virtual std::string cell_request(int64_t id, const std::string& code, bool silent) = 0;
  virtual Reply parse_reply(const std::string& line) = 0;
  // Whether an interrupted cell ends as Finished{aborted} (bash) rather than with the error the
  // REPL reports and Finished{ok} (node).
  virtual bool interrupt_aborts() const = 0;
  // Human name for messages ("node", "bash").
  virtual std::string program_name() const = 0;

  const KernelLaunch launch_;
  const KernelServices services_;

 private:
  struct Cell {
    int64_t id = 0;
    bool silent = false;
    EventSink sink;
    bool interrupted = false;
    bool finished = false;
  };

  void spawn_process();  // throws KernelError
  net::awaitable<void> wait_ready();  // throws KernelError
  net::awaitable<void> stop_process(bool graceful);
  void on_output(bool is_stderr, std::string text);
  void on_reply(const std::string& line);
  void on_exit(int wait_status);
  void finish(ExecutionFinished::Status status);
  void escalate_interrupt(int64_t cell_id, int attempt);

  std::shared_ptr<ReplProcess> process_;
  bool ready_ = false;
  bool stopping_ = false;              // a deliberate stop: no restart on exit
  std::optional<std::string> start_error_;  // why the current process cannot become ready
  std::string startup_log_;            // output before ready, for error messages
  int64_t next_request_ = 0;
  int64_t execution_count_ = 0;
  std::shared_ptr<Cell> cell_;
  async::Event changed_;
  net::steady_timer interrupt_timer_;
};

}  // namespace cove::interpreter
