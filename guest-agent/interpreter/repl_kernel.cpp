#include "interpreter/repl_kernel.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <chrono>
#include <cstring>

namespace cove::interpreter {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kReadyTimeout = std::chrono::seconds(30);
constexpr auto kGracefulStop = std::chrono::seconds(1);
constexpr auto kKillWait = std::chrono::seconds(3);
// An interrupt repeats SIGINT (one may land before the REPL runs the cell) and, when the cell
// still does not end, kills the process so the context is usable again (it restarts).
constexpr auto kInterruptRepeat = std::chrono::milliseconds(1000);
constexpr int kInterruptAttempts = 5;
constexpr size_t kStartupLogLimit = 4096;

std::string describe_exit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return std::string("was killed by signal ") + strsignal(WTERMSIG(wait_status));
  return "ended";
}

}  // namespace

ReplKernel::ReplKernel(KernelLaunch launch, KernelServices services)
    : launch_(std::move(launch)),
      services_(std::move(services)),
      changed_(services_.executor),
      interrupt_timer_(services_.executor) {}

ReplKernel::~ReplKernel() {
  interrupt_timer_.cancel();
  if (process_) {
    process_->detach();
    process_->signal_group(SIGKILL);
  }
}

void ReplKernel::spawn_process() {
  ReplProcessSpec spec = prepare();
  ready_ = false;
  start_error_.reset();
  startup_log_.clear();
  stopping_ = false;
  execution_count_ = 0;
  ReplProcess::Handlers handlers;
  handlers.output = [this](bool is_stderr, std::string text) { on_output(is_stderr, std::move(text)); };
  handlers.reply = [this](std::string line) { on_reply(line); };
  handlers.exited = [this](int status) { on_exit(status); };
  process_ = ReplProcess::spawn(services_.executor, *services_.processes, spec, std::move(handlers));
  if (std::string setup = setup_request(); !setup.empty()) {
    // Small enough for the pipe buffer: written without waiting.
    auto process = process_;
    net::co_spawn(services_.executor, process->send(std::move(setup)), net::detached);
  }
}

net::awaitable<void> ReplKernel::wait_ready() {
  auto deadline = Clock::now() + kReadyTimeout;
  while (!ready_ && !start_error_) {
    if (!co_await changed_.wait_until(deadline)) {
      start_error_ = program_name() + " did not answer within " +
                     std::to_string(kReadyTimeout.count()) + " s";
      if (process_) {
        process_->detach();
        process_->signal_group(SIGKILL);
        process_.reset();
      }
    }
  }
  if (!ready_) throw KernelError(*start_error_);
}

net::awaitable<void> ReplKernel::start() {
  if (!process_ || !process_->running()) spawn_process();
  co_await wait_ready();
}

net::awaitable<void> ReplKernel::execute(std::string code, bool silent, EventSink sink) {
  if (cell_) {
    ExecutionFailed busy{"KernelBusy", "Another execution is running on this kernel", ""};
    sink(busy);
    sink(ExecutionFinished{ExecutionFinished::Status::lost});
    co_return;
  }
  try {
    if (!process_ || (!process_->running() && !stopping_)) spawn_process();
    co_await wait_ready();
  } catch (const KernelError& e) {
    sink(ExecutionFailed{"KernelError", e.what(), ""});
    sink(ExecutionFinished{ExecutionFinished::Status::lost});
    co_return;
  }
  auto cell = std::make_shared<Cell>();
  cell->id = ++next_request_;
  cell->silent = silent;
  cell->sink = std::move(sink);
  std::string request;
  try {
    request = cell_request(cell->id, code, silent);
  } catch (const KernelError& e) {
    cell->sink(ExecutionFailed{"KernelError", e.what(), ""});
    cell->sink(ExecutionFinished{ExecutionFinished::Status::lost});
    co_return;
  }
  cell_ = cell;
  if (!silent) cell->sink(ExecutionStarted{++execution_count_});
  auto process = process_;
  co_await process->send(std::move(request));
  // A failed write means the process died: on_exit finishes the cell.
  while (!cell->finished) co_await changed_.wait();
}

void ReplKernel::interrupt() {
  if (!cell_ || cell_->finished || !process_) return;
  cell_->interrupted = true;
  process_->signal_group(SIGINT);
  escalate_interrupt(cell_->id, 1);
}

void ReplKernel::escalate_interrupt(int64_t cell_id, int attempt) {
  interrupt_timer_.expires_after(kInterruptRepeat);
  interrupt_timer_.async_wait([this, cell_id, attempt](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: the kernel may be gone, touch nothing
    if (!cell_ || cell_->id != cell_id || cell_->finished || !process_) return;
    if (attempt >= kInterruptAttempts) {
      process_->signal_group(SIGKILL);  // on_exit ends the cell as restarting
      return;
    }
    process_->signal_group(SIGINT);
    escalate_interrupt(cell_id, attempt + 1);
  });
}

void ReplKernel::on_output(bool is_stderr, std::string text) {
  if (!ready_) {
    startup_log_ += text;
    if (startup_log_.size() > kStartupLogLimit) startup_log_.erase(0, startup_log_.size() - kStartupLogLimit);
    return;
  }
  // Output between cells (timers, background jobs) has no execution to belong to.
  if (!cell_ || cell_->finished) return;
  cell_->sink(StreamOutput{is_stderr, std::move(text), iso_timestamp_now()});
}

void ReplKernel::on_reply(const std::string& line) {
  Reply reply = parse_reply(line);
  switch (reply.kind) {
    case Reply::Kind::ignore:
      return;
    case Reply::Kind::ready:
      if (!ready_) {
        if (process_) process_->drain_output(true);  // startup noise is not a cell's output
        ready_ = true;
        changed_.notify_all();
      }
      return;
    case Reply::Kind::fatal:
      if (!ready_) {
        start_error_ = reply.message;
        changed_.notify_all();
      }
      return;
    default:
      break;
  }
  if (!cell_ || cell_->finished || reply.id != cell_->id) return;  // stale
  auto cell = cell_;
  switch (reply.kind) {
    case Reply::Kind::result:
      if (!cell->silent) cell->sink(DisplayOutput{reply.data, true});
      break;
    case Reply::Kind::error:
      cell->sink(reply.error);
      break;
    case Reply::Kind::done: {
      // Everything the cell printed was written before its end was: read it all first.
      if (process_) process_->drain_output(true);
      bool aborted = cell->interrupted && interrupt_aborts();
      if (reply.status != 0 && !aborted) {
        cell->sink(ExecutionFailed{"", std::to_string(reply.status), ""});
      }
      finish(aborted ? ExecutionFinished::Status::aborted : ExecutionFinished::Status::ok);
      break;
    }
    default:
      break;
  }
}

void ReplKernel::finish(ExecutionFinished::Status status) {
  auto cell = cell_;
  if (!cell || cell->finished) return;
  cell->finished = true;
  cell_.reset();
  interrupt_timer_.cancel();
  cell->sink(ExecutionFinished{status});
  changed_.notify_all();
}

void ReplKernel::on_exit(int wait_status) {
  auto process = process_;
  if (process) process->signal_group(SIGKILL);  // nothing of the old session may linger
  bool was_ready = ready_;
  ready_ = false;
  finish(ExecutionFinished::Status::restarting);
  if (!was_ready) {
    if (!start_error_) {
      std::string log = startup_log_;
      while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
      start_error_ = program_name() + " " + describe_exit(wait_status) + " during startup" +
                     (log.empty() ? "" : ": " + log);
    }
    changed_.notify_all();
    return;
  }
  if (stopping_) return;
  // As Jupyter's restarter: a kernel that died comes back by itself, with fresh state.
  try {
    spawn_process();
  } catch (const KernelError& e) {
    start_error_ = e.what();
    process_.reset();
  }
  changed_.notify_all();
}

net::awaitable<void> ReplKernel::stop_process(bool graceful) {
  auto process = process_;
  if (!process) co_return;
  stopping_ = true;
  process->detach();
  finish(ExecutionFinished::Status::restarting);
  if (graceful && process->running()) {
    process->close_requests();  // both REPLs exit at end of input
    co_await process->wait_exit(Clock::now() + kGracefulStop);
  }
  process->signal_group(SIGKILL);
  co_await process->wait_exit(Clock::now() + kKillWait);
  if (process_ == process) process_.reset();
  ready_ = false;
}

net::awaitable<void> ReplKernel::restart() {
  co_await stop_process(false);
  spawn_process();
  co_await wait_ready();
}

net::awaitable<void> ReplKernel::shutdown() {
  interrupt_timer_.cancel();
  co_await stop_process(true);
}

}  // namespace cove::interpreter
