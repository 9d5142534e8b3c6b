#pragma once
// The shared fixture of the REPL kernel tests (bash, node): a real kernel on a private io_context
// and reaper, cells run to completion, events collected.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "interpreter/kernel.hpp"

namespace cove::interpreter::testing {

using namespace std::chrono_literals;

struct Collected {
  std::vector<ExecutionEvent> events;
  std::string stream(bool is_stderr) const {
    std::string out;
    for (const auto& e : events) {
      if (auto* s = std::get_if<StreamOutput>(&e); s && s->is_stderr == is_stderr) out += s->text;
    }
    return out;
  }
  std::optional<std::string> main_text() const {
    for (const auto& e : events) {
      if (auto* d = std::get_if<DisplayOutput>(&e); d && d->is_main_result) return d->data.value("text/plain", "");
    }
    return std::nullopt;
  }
  std::optional<ExecutionFailed> error() const {
    for (const auto& e : events) {
      if (auto* f = std::get_if<ExecutionFailed>(&e)) return *f;
    }
    return std::nullopt;
  }
  std::optional<int64_t> count() const {
    for (const auto& e : events) {
      if (auto* s = std::get_if<ExecutionStarted>(&e)) return s->execution_count;
    }
    return std::nullopt;
  }
  // The last event, which must be the only ExecutionFinished.
  ExecutionFinished::Status status() const {
    size_t finished = 0;
    for (const auto& e : events) finished += std::holds_alternative<ExecutionFinished>(e);
    EXPECT_EQ(finished, 1u);
    EXPECT_FALSE(events.empty());
    if (events.empty() || !std::holds_alternative<ExecutionFinished>(events.back())) {
      ADD_FAILURE() << "last event is not ExecutionFinished";
      return ExecutionFinished::Status::lost;
    }
    return std::get<ExecutionFinished>(events.back()).status;
  }
};

template <class K>
class ReplKernelFixture : public ::testing::Test {
 protected:
  explicit ReplKernelFixture(std::string default_language) : default_language_(std::move(default_language)) {}

  void SetUp() override {
    registry_.start_reaper();
    char dir[] = "/tmp/cove-repl-kernel-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    runtime_dir_ = dir;
  }

  void TearDown() override {
    if (kernel_) run([this]() -> net::awaitable<void> { co_await kernel_->shutdown(); });
    kernel_.reset();
    std::filesystem::remove_all(runtime_dir_);
  }

  KernelLaunch launch(const std::string& language, const std::string& cwd = "/tmp") {
    KernelLaunch l;
    l.language = language;
    l.cwd = cwd;
    l.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"};
    l.runtime_dir = runtime_dir_;
    return l;
  }

  // "" = the fixture's default language.
  void start(const std::string& language = "") {
    kernel_ = std::make_unique<K>(launch(language.empty() ? default_language_ : language),
                                  KernelServices{io_.get_executor(), &registry_});
    run([this]() -> net::awaitable<void> { co_await kernel_->start(); });
  }

  // Runs a coroutine on the io_context until it completes; rethrows what it threw.
  void run(std::function<net::awaitable<void>()> body, std::chrono::seconds limit = 20s) {
    bool done = false;
    std::exception_ptr error;
    net::co_spawn(io_, body(), [&](std::exception_ptr e) {
      error = e;
      done = true;
    });
    auto deadline = std::chrono::steady_clock::now() + limit;
    io_.restart();
    while (!done && std::chrono::steady_clock::now() < deadline) io_.run_one_for(50ms);
    ASSERT_TRUE(done) << "timed out";
    if (error) std::rethrow_exception(error);
  }

  // Executes `code`; with `interrupt_after`, interrupts the kernel that long after the start.
  Collected exec(const std::string& code, bool silent = false,
                 std::optional<std::chrono::milliseconds> interrupt_after = std::nullopt) {
    Collected c;
    net::steady_timer timer(io_);
    if (interrupt_after) {
      timer.expires_after(*interrupt_after);
      timer.async_wait([this](boost::system::error_code ec) {
        if (!ec) kernel_->interrupt();
      });
    }
    run([&]() -> net::awaitable<void> {
      EventSink sink = [&c](ExecutionEvent e) { c.events.push_back(std::move(e)); };
      std::string cell = code;
      co_await kernel_->execute(cell, silent, sink);
    });
    timer.cancel();
    return c;
  }

  net::io_context io_;
  process::Registry registry_{io_.get_executor()};
  std::string runtime_dir_;
  std::unique_ptr<K> kernel_;
  std::string default_language_;
};

}  // namespace cove::interpreter::testing
