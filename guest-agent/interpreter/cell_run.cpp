#include "interpreter/cell_run.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <deque>

#include "interpreter/execution_output.hpp"
#include "interpreter/languages.hpp"

namespace cove::interpreter {
namespace {

struct Progress {
  explicit Progress(net::any_io_executor executor) : wake(std::move(executor)) {}
  std::deque<std::string> lines;
  bool errored = false;        // an execution carries at most one error line
  bool kernel_finished = false;  // the kernel sent ExecutionFinished
  bool done = false;             // execute() returned
  async::Event wake;
};

void collect(Progress& progress, const ExecutionEvent& event) {
  bool is_error = std::holds_alternative<ExecutionFailed>(event);
  if (auto* finished = std::get_if<ExecutionFinished>(&event)) {
    progress.kernel_finished = true;
    is_error = finished->status != ExecutionFinished::Status::ok;
  }
  if (is_error) {
    if (progress.errored) return;
    progress.errored = true;
  }
  for (auto& line : lines_for_event(event)) progress.lines.push_back(std::move(line));
  progress.wake.notify_all();
}

}  // namespace

net::awaitable<void> run_cell(std::shared_ptr<Context> context, CellRequest request, GlobalEnvSource globals,
                              CellOutput& output, std::chrono::milliseconds keepalive) {
  auto executor = co_await net::this_coro::executor;
  auto guard = co_await context->lock.lock();

  auto progress = std::make_shared<Progress>(executor);
  std::map<std::string, std::string> global_env;
  output.watch_client(&progress->wake);
  if (context->removed) {
    // Deleted while this request waited for it.
    progress->lines.push_back(error_line("ContextNotFound", "Context " + context->id + " was removed"));
    progress->done = true;
  } else {
    std::string snippet;
    if (!context->globals_applied || !request.env_vars.empty()) global_env = co_await globals();
    if (!context->globals_applied) {
      snippet += env_set_code(context->language, global_env);
      context->globals_applied = true;
    }
    snippet += env_set_code(context->language, request.env_vars);
    std::string cell = prepend_indented(snippet, request.code);
    EventSink sink = [progress](ExecutionEvent event) { collect(*progress, event); };
    net::co_spawn(
        executor,
        [context, cell = std::move(cell), sink, progress]() -> net::awaitable<void> {
          try {
            co_await context->kernel->execute(cell, false, sink);
          } catch (const std::exception&) {
            // Reported below as an unexpected end: the kernel never finished the cell.
          }
          progress->done = true;
          progress->wake.notify_all();
        },
        net::detached);
  }

  auto last_write = std::chrono::steady_clock::now();
  bool interrupted = false;
  for (;;) {
    while (!progress->lines.empty() && !output.client_gone()) {
      std::string line = std::move(progress->lines.front());
      progress->lines.pop_front();
      if (!co_await output.write(line)) break;
      last_write = std::chrono::steady_clock::now();
    }
    if (output.client_gone()) {
      progress->lines.clear();
      // The next execution must not wait behind a cell nobody reads (E2B interrupts too).
      if (!interrupted && !progress->done) {
        context->kernel->interrupt();
        interrupted = true;
      }
    }
    if (progress->done && progress->lines.empty()) break;
    auto now = std::chrono::steady_clock::now();
    if (!output.client_gone() && now - last_write >= keepalive) {
      std::string line = keepalive_line();
      co_await output.write(line);
      last_write = std::chrono::steady_clock::now();
      continue;
    }
    auto deadline = output.client_gone() ? std::chrono::steady_clock::time_point::max() : last_write + keepalive;
    co_await progress->wake.wait_until(deadline);
  }

  if (!output.client_gone()) {
    if (!progress->kernel_finished && !context->removed && !progress->errored) {
      std::string line = unexpected_end_line();
      co_await output.write(line);
    }
    std::string end = end_of_execution_line();
    co_await output.write(end);
  }

  // Undo the per-call variables before the lock passes on (E2B does it in a background task the
  // next execution waits for: the same order, seen from outside).
  if (!request.env_vars.empty() && !context->removed) {
    std::string restore = env_restore_code(context->language, request.env_vars, global_env);
    if (!restore.empty()) {
      EventSink ignore = [](ExecutionEvent) {};
      try {
        co_await context->kernel->execute(restore, true, ignore);
      } catch (const std::exception&) {
        // A dead kernel has no variables left to undo.
      }
    }
  }
}

}  // namespace cove::interpreter
