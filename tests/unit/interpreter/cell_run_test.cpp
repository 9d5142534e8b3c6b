// run_cell over a scripted kernel: ordering, error de-duplication, keepalives, env vars, the
// per-context queue, and the interrupt when the client goes away.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include "interpreter/cell_run.hpp"

namespace cove::interpreter {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

struct ScriptedKernel : Kernel {
  explicit ScriptedKernel(net::any_io_executor ex) : executor(ex) {}
  net::awaitable<void> start() override { co_return; }
  net::awaitable<void> execute(std::string code, bool silent, EventSink sink) override {
    cells.push_back({code, silent});
    if (silent) co_return;
    ++running;
    max_running = std::max(max_running, running);
    for (auto& event : script) {
      if (delay.count() > 0) {
        net::steady_timer t(executor, delay);
        co_await t.async_wait(net::use_awaitable);
      }
      sink(event);
    }
    if (hang) {
      hang_timer = std::make_unique<net::steady_timer>(executor, std::chrono::steady_clock::time_point::max());
      boost::system::error_code ec;
      co_await hang_timer->async_wait(net::redirect_error(net::use_awaitable, ec));
      ExecutionEvent failed = ExecutionFailed{"KeyboardInterrupt", "", ""};
      sink(failed);
      ExecutionEvent finished = ExecutionFinished{};
      sink(finished);
    }
    --running;
  }
  void interrupt() override {
    ++interrupts;
    if (hang_timer) hang_timer->cancel();
  }
  net::awaitable<void> restart() override { co_return; }
  net::awaitable<void> shutdown() override { co_return; }

  net::any_io_executor executor;
  std::vector<ExecutionEvent> script;
  std::chrono::milliseconds delay{0};
  bool hang = false;
  std::unique_ptr<net::steady_timer> hang_timer;
  std::vector<std::pair<std::string, bool>> cells;
  int interrupts = 0;
  int running = 0;
  int max_running = 0;
};

struct RecordingOutput : CellOutput {
  void watch_client(async::Event* w) override { wake = w; }
  bool client_gone() const override { return gone; }
  net::awaitable<bool> write(const std::string& line) override {
    if (gone) co_return false;
    lines.push_back(line);
    if (close_after && lines.size() >= close_after) {
      gone = true;
      if (wake) wake->notify_all();
    }
    co_return true;
  }
  std::vector<Json> parsed() const {
    std::vector<Json> out;
    for (const auto& l : lines) {
      EXPECT_FALSE(l.empty());
      EXPECT_EQ(l.back(), '\n');
      EXPECT_EQ(l.find('\n'), l.size() - 1);
      out.push_back(Json::parse(l));
    }
    return out;
  }
  std::vector<std::string> lines;
  async::Event* wake = nullptr;
  bool gone = false;
  size_t close_after = 0;
};

struct Harness {
  net::io_context io;
  std::shared_ptr<Context> context = std::make_shared<Context>(io.get_executor(), "ctx", "python", "/");
  ScriptedKernel* kernel;
  std::map<std::string, std::string> globals;
  int global_fetches = 0;

  Harness() {
    auto k = std::make_unique<ScriptedKernel>(io.get_executor());
    kernel = k.get();
    context->kernel = std::move(k);
  }

  GlobalEnvSource source() {
    return [this]() -> net::awaitable<std::map<std::string, std::string>> {
      ++global_fetches;
      co_return globals;
    };
  }

  void run(CellRequest request, RecordingOutput& out, std::chrono::milliseconds keepalive = 5s) {
    bool done = false;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
          co_await run_cell(context, request, source(), out, keepalive);
          done = true;
        },
        net::detached);
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!done && std::chrono::steady_clock::now() < deadline) {
      io.run_for(10ms);
      io.restart();
    }
    ASSERT_TRUE(done);
  }
};

TEST(CellRun, EventsInOrderThenEndOfExecution) {
  Harness h;
  h.kernel->script = {ExecutionStarted{1}, StreamOutput{false, "hi\n", "t"}, DisplayOutput{Json{{"text/plain", "2"}}, true},
                      ExecutionFinished{}};
  RecordingOutput out;
  h.run(CellRequest{"print('hi'); 1+1", {}}, out);
  auto lines = out.parsed();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["type"], "number_of_executions");
  EXPECT_EQ(lines[1]["type"], "stdout");
  EXPECT_EQ(lines[2]["type"], "result");
  EXPECT_EQ(lines[3], (Json{{"type", "end_of_execution"}}));
  EXPECT_EQ(h.kernel->cells.at(0).first, "print('hi'); 1+1");
}

TEST(CellRun, AtMostOneErrorLine) {
  Harness h;
  h.kernel->script = {ExecutionStarted{1}, ExecutionFailed{"NameError", "x", "tb"}, ExecutionFailed{"NameError", "x", "tb"},
                      ExecutionFinished{ExecutionFinished::Status::aborted}};
  RecordingOutput out;
  h.run(CellRequest{"x", {}}, out);
  auto lines = out.parsed();
  int errors = 0;
  for (auto& l : lines) errors += l["type"] == "error";
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(lines.back()["type"], "end_of_execution");
}

TEST(CellRun, KernelThatNeverFinishesGivesUnexpectedEnd) {
  Harness h;
  h.kernel->script = {ExecutionStarted{1}};
  RecordingOutput out;
  h.run(CellRequest{"x", {}}, out);
  auto lines = out.parsed();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1]["name"], "UnexpectedEndOfExecution");
  EXPECT_EQ(lines[2]["type"], "end_of_execution");
}

TEST(CellRun, KeepaliveDuringSilence) {
  Harness h;
  h.kernel->script = {ExecutionStarted{1}, ExecutionFinished{}};
  h.kernel->delay = 120ms;
  RecordingOutput out;
  h.run(CellRequest{"import time; time.sleep(1)", {}}, out, 50ms);
  auto lines = out.parsed();
  int keepalives = 0;
  for (auto& l : lines) keepalives += l["type"] == "keepalive";
  EXPECT_GE(keepalives, 2);
  EXPECT_EQ(lines.back()["type"], "end_of_execution");
}

TEST(CellRun, GlobalsOnceThenPerCallVarsSetAndUndone) {
  Harness h;
  h.globals = {{"G", "1"}};
  h.kernel->script = {ExecutionStarted{1}, ExecutionFinished{}};
  RecordingOutput first;
  h.run(CellRequest{"a", {{"FOO", "bar"}, {"G", "override"}}}, first);
  ASSERT_EQ(h.kernel->cells.size(), 2u);
  EXPECT_EQ(h.kernel->cells[0].first,
            "import os; os.environ['G'] = '1'\nimport os; os.environ['FOO'] = 'bar'\nimport os; os.environ['G'] = 'override'\na");
  EXPECT_FALSE(h.kernel->cells[0].second);
  // Undone silently: FOO removed, G back to its global value.
  EXPECT_EQ(h.kernel->cells[1].first, "import os; os.environ.pop('FOO', None)\nimport os; os.environ['G'] = '1'\n");
  EXPECT_TRUE(h.kernel->cells[1].second);
  RecordingOutput second;
  h.run(CellRequest{"b", {}}, second);
  ASSERT_EQ(h.kernel->cells.size(), 3u);
  EXPECT_EQ(h.kernel->cells[2].first, "b");  // globals only on the first run
  EXPECT_EQ(h.global_fetches, 1);
}

TEST(CellRun, ClientGoneInterruptsAndTheContextStaysUsable) {
  Harness h;
  h.kernel->script = {ExecutionStarted{1}};
  h.kernel->hang = true;
  RecordingOutput out;
  out.close_after = 1;  // the client leaves after the first line
  h.run(CellRequest{"import time; time.sleep(30)", {}}, out);
  EXPECT_EQ(h.kernel->interrupts, 1);
  EXPECT_EQ(out.lines.size(), 1u);
  EXPECT_FALSE(h.context->lock.locked());
  h.kernel->hang = false;
  h.kernel->script = {ExecutionStarted{2}, ExecutionFinished{}};
  RecordingOutput next;
  h.run(CellRequest{"1+1", {}}, next);
  EXPECT_EQ(next.parsed().back()["type"], "end_of_execution");
}

TEST(CellRun, ExecutionsOnOneContextNeverOverlap) {
  Harness h;
  h.kernel->script = {ExecutionStarted{1}, ExecutionFinished{}};
  h.kernel->delay = 20ms;
  RecordingOutput a, b, c;
  int done = 0;
  for (auto* out : {&a, &b, &c}) {
    net::co_spawn(
        h.io,
        [&, out]() -> net::awaitable<void> {
          CellRequest request{"x", {}};
          co_await run_cell(h.context, request, h.source(), *out);
          ++done;
        },
        net::detached);
  }
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (done < 3 && std::chrono::steady_clock::now() < deadline) {
    h.io.run_for(10ms);
    h.io.restart();
  }
  ASSERT_EQ(done, 3);
  EXPECT_EQ(h.kernel->max_running, 1);
}

TEST(CellRun, RemovedContextAnswersWithAnErrorAndEnd) {
  Harness h;
  h.context->removed = true;
  RecordingOutput out;
  h.run(CellRequest{"x", {}}, out);
  auto lines = out.parsed();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["type"], "error");
  EXPECT_EQ(lines[1]["type"], "end_of_execution");
  EXPECT_TRUE(h.kernel->cells.empty());
}

}  // namespace
}  // namespace cove::interpreter
