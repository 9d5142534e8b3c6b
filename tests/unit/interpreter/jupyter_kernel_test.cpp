// JupyterKernel against the real python3 ipykernel on this host (Debian's python3-ipykernel).
// One kernel is shared by most tests: each start costs about 1.5 s.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

#include "interpreter/jupyter_kernel.hpp"
#include "interpreter/python_profile.hpp"

namespace cove::interpreter {
namespace {

using namespace std::chrono_literals;
using Status = ExecutionFinished::Status;

struct Collected {
  std::vector<ExecutionEvent> events;

  std::string stream(bool is_stderr) const {
    std::string out;
    for (const auto& e : events) {
      if (auto* s = std::get_if<StreamOutput>(&e); s && s->is_stderr == is_stderr) out += s->text;
    }
    return out;
  }
  std::vector<DisplayOutput> displays() const {
    std::vector<DisplayOutput> out;
    for (const auto& e : events) {
      if (auto* d = std::get_if<DisplayOutput>(&e)) out.push_back(*d);
    }
    return out;
  }
  std::vector<ExecutionFailed> errors() const {
    std::vector<ExecutionFailed> out;
    for (const auto& e : events) {
      if (auto* f = std::get_if<ExecutionFailed>(&e)) out.push_back(*f);
    }
    return out;
  }
  std::vector<int64_t> counts() const {
    std::vector<int64_t> out;
    for (const auto& e : events) {
      if (auto* s = std::get_if<ExecutionStarted>(&e)) out.push_back(s->execution_count);
    }
    return out;
  }
  // The status of the last event, which must be the only ExecutionFinished.
  Status status() const {
    size_t finished = 0;
    for (const auto& e : events) finished += std::holds_alternative<ExecutionFinished>(e);
    EXPECT_EQ(finished, 1u) << describe();
    if (events.empty() || !std::holds_alternative<ExecutionFinished>(events.back())) {
      ADD_FAILURE() << "last event is not ExecutionFinished: " << describe();
      return Status::lost;
    }
    return std::get<ExecutionFinished>(events.back()).status;
  }
  std::string describe() const {
    std::ostringstream out;
    for (const auto& e : events) {
      if (auto* s = std::get_if<ExecutionStarted>(&e)) out << "[started " << s->execution_count << "]";
      if (auto* s = std::get_if<StreamOutput>(&e)) out << "[" << (s->is_stderr ? "stderr " : "stdout ") << s->text << "]";
      if (auto* d = std::get_if<DisplayOutput>(&e)) out << "[display " << d->is_main_result << " " << d->data.dump() << "]";
      if (auto* f = std::get_if<ExecutionFailed>(&e)) out << "[error " << f->name << ": " << f->value << "]";
      if (auto* f = std::get_if<ExecutionFinished>(&e)) out << "[finished " << static_cast<int>(f->status) << "]";
    }
    return out.str();
  }
};

bool process_exists(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

class JupyterKernelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    io_ = new net::io_context;
    registry_ = new process::Registry(io_->get_executor());
    registry_->start_reaper();
    char dir[] = "/tmp/cove-jupyter-kernel-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root_ = dir;
    std::filesystem::create_directories(root_ + "/work");
    shared_ = make_kernel("shared").release();
    run([]() -> net::awaitable<void> { co_await shared_->start(); }, 60s);
  }

  static void TearDownTestSuite() {
    if (shared_) {
      pid_t pid = shared_->pid();
      run([]() -> net::awaitable<void> { co_await shared_->shutdown(); });
      EXPECT_FALSE(process_exists(pid));
      delete shared_;
      shared_ = nullptr;
    }
    delete registry_;
    delete io_;
    std::filesystem::remove_all(root_);
  }

  static std::unique_ptr<JupyterKernel> make_kernel(const std::string& name,
                                                    std::optional<Kernelspec> spec = std::nullopt) {
    if (!spec) spec = find_kernelspec("python3");
    EXPECT_TRUE(spec.has_value()) << "python3-ipykernel is not installed";
    if (!spec) return nullptr;
    KernelLaunch launch;
    launch.language = "python";
    launch.cwd = root_ + "/work";
    launch.runtime_dir = root_ + "/runtime-" + name;
    // The agent's own profile, as the server starts kernels (NoColor tracebacks among others).
    launch.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + root_, "IPYTHONDIR=" + write_python_profile(root_),
                  "COVE_TEST_VAR=h\xc3\xa9llo", "JPY_PARENT_PID=1"};
    return std::make_unique<JupyterKernel>(KernelServices{io_->get_executor(), registry_}, launch, *spec);
  }

  // Runs `task` on the shared io_context until it finishes; rethrows its exception.
  static void run(std::function<net::awaitable<void>()> task, std::chrono::seconds limit = 30s) {
    bool done = false;
    std::exception_ptr error;
    net::co_spawn(*io_, task(), [&](std::exception_ptr e) {
      error = e;
      done = true;
    });
    run_until([&] { return done; }, limit);
    ASSERT_TRUE(done) << "timed out";
    if (error) std::rethrow_exception(error);
  }

  static void run_until(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition() && std::chrono::steady_clock::now() < deadline) {
      if (io_->stopped()) io_->restart();
      io_->run_one_for(20ms);
    }
  }

  // One cell; `during` runs (detached) while the cell executes.
  static Collected execute(JupyterKernel& kernel, const std::string& code, bool silent = false,
                           std::function<net::awaitable<void>()> during = {}) {
    Collected c;
    run([&]() -> net::awaitable<void> {
      if (during) net::co_spawn(*io_, during(), net::detached);
      EventSink sink = [&c](ExecutionEvent e) { c.events.push_back(std::move(e)); };
      std::string cell = code;
      co_await kernel.execute(cell, silent, sink);
    });
    return c;
  }

  static net::awaitable<void> sleep(std::chrono::milliseconds d) {
    net::steady_timer t(*io_, d);
    co_await t.async_wait(net::use_awaitable);
  }

  static net::awaitable<void> restart_after(std::chrono::milliseconds delay, std::shared_ptr<bool> done) {
    co_await sleep(delay);
    co_await shared_->restart();
    *done = true;
  }

  static net::io_context* io_;
  static process::Registry* registry_;
  static std::string root_;
  static JupyterKernel* shared_;
};

net::io_context* JupyterKernelTest::io_ = nullptr;
process::Registry* JupyterKernelTest::registry_ = nullptr;
std::string JupyterKernelTest::root_;
JupyterKernel* JupyterKernelTest::shared_ = nullptr;

TEST_F(JupyterKernelTest, ExpressionGivesStartedThenMainResultThenOk) {
  ASSERT_NE(shared_, nullptr);
  auto c = execute(*shared_, "1+1");
  ASSERT_EQ(c.events.size(), 3u) << c.describe();
  auto* started = std::get_if<ExecutionStarted>(&c.events[0]);
  ASSERT_NE(started, nullptr) << c.describe();
  EXPECT_GT(started->execution_count, 0);
  auto* result = std::get_if<DisplayOutput>(&c.events[1]);
  ASSERT_NE(result, nullptr) << c.describe();
  EXPECT_TRUE(result->is_main_result);
  EXPECT_EQ(result->data.value("text/plain", ""), "2");
  EXPECT_EQ(c.status(), Status::ok);

  // State is kept between cells and execution counts go up.
  auto set = execute(*shared_, "shared_value = 20");
  auto get = execute(*shared_, "shared_value * 2");
  ASSERT_EQ(get.displays().size(), 1u) << get.describe();
  EXPECT_EQ(get.displays()[0].data.value("text/plain", ""), "40");
  ASSERT_EQ(set.counts().size(), 1u);
  ASSERT_EQ(get.counts().size(), 1u);
  EXPECT_EQ(get.counts()[0], set.counts()[0] + 1);
}

TEST_F(JupyterKernelTest, PrintGivesStreamsWithPythonTimestamps) {
  ASSERT_NE(shared_, nullptr);
  auto c = execute(*shared_, "print('hello')");
  ASSERT_EQ(c.events.size(), 3u) << c.describe();
  auto* out = std::get_if<StreamOutput>(&c.events[1]);
  ASSERT_NE(out, nullptr) << c.describe();
  EXPECT_FALSE(out->is_stderr);
  EXPECT_EQ(out->text, "hello\n");
  std::regex python_date(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?\+00:00$)");
  EXPECT_TRUE(std::regex_match(out->timestamp, python_date)) << out->timestamp;
  EXPECT_EQ(c.status(), Status::ok);

  auto err = execute(*shared_, "import sys; print('oops', file=sys.stderr)");
  EXPECT_EQ(err.stream(true), "oops\n") << err.describe();
  EXPECT_EQ(err.stream(false), "");
  EXPECT_EQ(err.status(), Status::ok);
}

TEST_F(JupyterKernelTest, KernelRunsInTheLaunchCwdWithTheLaunchEnv) {
  ASSERT_NE(shared_, nullptr);
  auto c = execute(*shared_,
                   "import os\n"
                   "print(os.getcwd())\n"
                   "print(os.environ['COVE_TEST_VAR'])\n"
                   "print(os.environ.get('PYDEVD_DISABLE_FILE_VALIDATION'))\n"
                   "print(os.environ.get('JPY_PARENT_PID'))\n"
                   "print(os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid())\n");
  EXPECT_EQ(c.stream(false), root_ + "/work\nh\xc3\xa9llo\n1\nNone\nTrue True\n") << c.describe();
  EXPECT_EQ(c.status(), Status::ok);

  struct stat st {};
  std::string runtime = root_ + "/runtime-shared";
  ASSERT_TRUE(std::filesystem::exists(runtime + "/kernel.log"));
  bool found = false;
  for (const auto& entry : std::filesystem::directory_iterator(runtime)) {
    if (entry.path().extension() != ".json") continue;
    found = true;
    ASSERT_EQ(::stat(entry.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << entry.path();
  }
  EXPECT_TRUE(found) << "no connection file";
}

TEST_F(JupyterKernelTest, NameErrorIsReportedExactlyOnce) {
  ASSERT_NE(shared_, nullptr);
  auto c = execute(*shared_, "xyz");
  auto errors = c.errors();
  ASSERT_EQ(errors.size(), 1u) << c.describe();
  EXPECT_EQ(errors[0].name, "NameError");
  EXPECT_EQ(errors[0].value, "name 'xyz' is not defined");
  EXPECT_NE(errors[0].traceback.find("NameError"), std::string::npos) << errors[0].traceback;
  // One entry per line, even where the kernel's entries carry no newline of their own.
  EXPECT_NE(errors[0].traceback.find("Traceback (most recent call last)\n"), std::string::npos) << errors[0].traceback;
  EXPECT_EQ(errors[0].traceback.find("\x1b["), std::string::npos) << errors[0].traceback;
  EXPECT_EQ(c.counts().size(), 1u);
  EXPECT_TRUE(c.displays().empty());
  EXPECT_EQ(c.status(), Status::ok);

  // The kernel stays usable after an error (stop_on_error must not abort the next cell).
  auto next = execute(*shared_, "3*3");
  ASSERT_EQ(next.displays().size(), 1u) << next.describe();
  EXPECT_EQ(next.displays()[0].data.value("text/plain", ""), "9");
  EXPECT_EQ(next.status(), Status::ok);
}

TEST_F(JupyterKernelTest, ACellRightAfterAnErrorIsNotAborted) {
  ASSERT_NE(shared_, nullptr);
  // With stop_on_error, ipykernel aborts what reaches it just after an error; the next cell is
  // sent as soon as the failing one ends, so it can land in that window and must be resent.
  for (int i = 0; i < 10; ++i) {
    auto failing = execute(*shared_, "raise KeyboardInterrupt");
    ASSERT_EQ(failing.errors().size(), 1u) << failing.describe();
    auto next = execute(*shared_, "40+2");
    EXPECT_EQ(next.status(), Status::ok) << next.describe();
    ASSERT_EQ(next.displays().size(), 1u) << next.describe();
    EXPECT_EQ(next.displays()[0].data.value("text/plain", ""), "42");
    EXPECT_EQ(next.counts().size(), 1u);
  }
}

TEST_F(JupyterKernelTest, DisplayOfSeveralObjectsGivesSeveralResults) {
  ASSERT_NE(shared_, nullptr);
  auto c = execute(*shared_,
                   "from IPython.display import display, HTML\n"
                   "display(1)\n"
                   "display('a')\n"
                   "display(HTML('<b>x</b>'))\n");
  auto displays = c.displays();
  ASSERT_EQ(displays.size(), 3u) << c.describe();
  for (const auto& d : displays) EXPECT_FALSE(d.is_main_result);
  EXPECT_EQ(displays[0].data.value("text/plain", ""), "1");
  EXPECT_EQ(displays[1].data.value("text/plain", ""), "'a'");
  EXPECT_EQ(displays[2].data.value("text/html", ""), "<b>x</b>");
  EXPECT_EQ(c.status(), Status::ok);
}

TEST_F(JupyterKernelTest, SilentCellsHaveNoStartAndDoNotCount) {
  ASSERT_NE(shared_, nullptr);
  auto before = execute(*shared_, "'before'");
  auto silent = execute(*shared_, "silent_value = 7", true);
  EXPECT_TRUE(silent.counts().empty()) << silent.describe();
  EXPECT_EQ(silent.status(), Status::ok);
  auto after = execute(*shared_, "silent_value");
  ASSERT_EQ(after.displays().size(), 1u) << after.describe();
  EXPECT_EQ(after.displays()[0].data.value("text/plain", ""), "7");
  ASSERT_EQ(before.counts().size(), 1u);
  ASSERT_EQ(after.counts().size(), 1u);
  EXPECT_EQ(after.counts()[0], before.counts()[0] + 1);

  // A silent cell's error still comes through (the integrator's cwd/env cells rely on it).
  auto failing = execute(*shared_, "raise ValueError('bad cwd')", true);
  ASSERT_EQ(failing.errors().size(), 1u) << failing.describe();
  EXPECT_EQ(failing.errors()[0].name, "ValueError");
  EXPECT_EQ(failing.status(), Status::ok);
}

TEST_F(JupyterKernelTest, InterruptStopsASleepingCellAndTheKernelStaysUsable) {
  ASSERT_NE(shared_, nullptr);
  auto started = std::chrono::steady_clock::now();
  auto c = execute(*shared_, "import time; time.sleep(30)", false, []() -> net::awaitable<void> {
    co_await sleep(1s);
    shared_->interrupt();
  });
  EXPECT_LT(std::chrono::steady_clock::now() - started, 6s);
  auto errors = c.errors();
  ASSERT_EQ(errors.size(), 1u) << c.describe();
  EXPECT_EQ(errors[0].name, "KeyboardInterrupt");
  EXPECT_EQ(c.status(), Status::ok);

  auto next = execute(*shared_, "1+1");
  ASSERT_EQ(next.displays().size(), 1u) << next.describe();
  EXPECT_EQ(next.displays()[0].data.value("text/plain", ""), "2");
}

TEST_F(JupyterKernelTest, RestartEndsThePendingCellAndDropsState) {
  ASSERT_NE(shared_, nullptr);
  pid_t old_pid = shared_->pid();
  ASSERT_GT(old_pid, 0);
  auto restarted = std::make_shared<bool>(false);
  // The restart outlives the cell: its state lives in the coroutine's parameters, not in a
  // lambda's captures.
  auto c = execute(*shared_, "x = 41\nimport time; time.sleep(30)", false,
                   [restarted]() { return restart_after(500ms, restarted); });
  EXPECT_EQ(c.status(), Status::restarting) << c.describe();
  run_until([&] { return *restarted; }, 15s);
  ASSERT_TRUE(*restarted);
  EXPECT_FALSE(process_exists(old_pid));
  EXPECT_GT(shared_->pid(), 0);
  EXPECT_NE(shared_->pid(), old_pid);

  auto x = execute(*shared_, "x");
  ASSERT_EQ(x.errors().size(), 1u) << x.describe();
  EXPECT_EQ(x.errors()[0].name, "NameError");
  EXPECT_EQ(x.errors()[0].value, "name 'x' is not defined");
  auto cwd = execute(*shared_, "import os; os.getcwd()");
  ASSERT_EQ(cwd.displays().size(), 1u) << cwd.describe();
  EXPECT_EQ(cwd.displays()[0].data.value("text/plain", ""), "'" + root_ + "/work'");
}

TEST_F(JupyterKernelTest, DeathEndsTheCellAsRestartingAndTheKernelComesBack) {
  ASSERT_NE(shared_, nullptr);
  pid_t old_pid = shared_->pid();
  execute(*shared_, "y = 1");
  auto c = execute(*shared_, "import os; os.kill(os.getpid(), 9)");
  EXPECT_EQ(c.status(), Status::restarting) << c.describe();
  EXPECT_TRUE(c.errors().empty()) << c.describe();

  // Issued while the kernel relaunches: waits for it, then runs on the fresh process.
  auto next = execute(*shared_, "1+1");
  ASSERT_EQ(next.displays().size(), 1u) << next.describe();
  EXPECT_EQ(next.displays()[0].data.value("text/plain", ""), "2");
  EXPECT_EQ(next.status(), Status::ok);
  EXPECT_NE(shared_->pid(), old_pid);
  EXPECT_FALSE(process_exists(old_pid));
  auto y = execute(*shared_, "y");
  ASSERT_EQ(y.errors().size(), 1u) << y.describe();
  EXPECT_EQ(y.errors()[0].name, "NameError");
}

TEST_F(JupyterKernelTest, ShutdownLeavesNoProcessAndRefusesCells) {
  auto kernel = make_kernel("shutdown");
  ASSERT_NE(kernel, nullptr);
  run([&]() -> net::awaitable<void> { co_await kernel->start(); }, 60s);
  pid_t pid = kernel->pid();
  ASSERT_TRUE(process_exists(pid));
  auto started = std::chrono::steady_clock::now();
  run([&]() -> net::awaitable<void> { co_await kernel->shutdown(); });
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  EXPECT_EQ(kernel->pid(), -1);
  EXPECT_FALSE(process_exists(pid));  // exited and reaped
  bool refused = false;
  try {
    execute(*kernel, "1");
  } catch (const KernelError&) {
    refused = true;
  }
  EXPECT_TRUE(refused);
  for (const auto& entry : std::filesystem::directory_iterator(root_ + "/runtime-shutdown")) {
    EXPECT_NE(entry.path().extension(), ".json") << "connection file left: " << entry.path();
  }
}

TEST_F(JupyterKernelTest, DestructorKillsTheProcess) {
  auto kernel = make_kernel("destructor");
  ASSERT_NE(kernel, nullptr);
  run([&]() -> net::awaitable<void> { co_await kernel->start(); }, 60s);
  pid_t pid = kernel->pid();
  ASSERT_TRUE(process_exists(pid));
  kernel.reset();
  run_until([&] { return !process_exists(pid); }, 5000ms);  // the reaper collects it
  EXPECT_FALSE(process_exists(pid));
}

TEST_F(JupyterKernelTest, AKernelThatCannotStartIsAClearError) {
  Kernelspec broken;
  broken.name = "broken";
  broken.argv = {"/nonexistent/kernel-binary", "-f", "{connection_file}"};
  auto kernel = make_kernel("broken", broken);
  ASSERT_NE(kernel, nullptr);
  auto started = std::chrono::steady_clock::now();
  try {
    run([&]() -> net::awaitable<void> { co_await kernel->start(); });
    ADD_FAILURE() << "started";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("exited during startup (exit code 127; see kernel.log)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  try {
    execute(*kernel, "1");
    ADD_FAILURE() << "executed on a failed kernel";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("exited during startup"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cove::interpreter
