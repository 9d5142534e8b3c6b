// Real processes through process::Registry: output, exit, signals, lifetime, PTY, lookups and the
// retained-exit window. Every wait is bounded so a bug fails a test instead of hanging it.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <set>

#include "process/registry.hpp"

namespace net = boost::asio;
using namespace std::chrono_literals;
using cove::process::ExitInfo;
using cove::process::InputError;
using cove::process::OutputEvent;
using cove::process::OutputStream;
using cove::process::Process;
using cove::process::Registry;
using cove::process::Selector;
using cove::process::StartRequest;
using cove::process::Started;
using cove::process::StdinMode;
using cove::process::Subscription;
using Clock = std::chrono::steady_clock;

namespace {

struct Collected {
  std::vector<OutputEvent> events;
  std::string out, err, pty;
  std::optional<ExitInfo> end;
  bool data_after_end = false;

  void take(Subscription& sub) {
    while (auto ev = sub.pop()) {
      if (ev->kind == OutputEvent::Kind::data) {
        if (end) data_after_end = true;
        switch (ev->stream) {
          case OutputStream::stdout_stream: out += ev->bytes; break;
          case OutputStream::stderr_stream: err += ev->bytes; break;
          case OutputStream::pty: pty += ev->bytes; break;
        }
      } else {
        end = ev->exit;
      }
      events.push_back(std::move(*ev));
    }
  }
};

class Harness {
 public:
  Harness() : registry(io.get_executor()) { registry.start_reaper(); }

  ~Harness() {
    // Leave nothing running: kill every process group we started, then let the reaper see it.
    for (pid_t pid : started_pids) ::kill(-pid, SIGKILL);
    run_until([&] { return registry.live_count() == 0; }, 2s);
    for (pid_t pid : started_pids) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, WNOHANG) > 0) {
      }
    }
  }

  // Runs the io_context in short slices until `done` holds or `limit` passes.
  template <typename Pred>
  bool run_until(Pred done, std::chrono::milliseconds limit = 4s) {
    const auto deadline = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() >= deadline) return false;
      io.restart();
      io.run_for(5ms);
    }
    return true;
  }

  void run_for(std::chrono::milliseconds d) {
    const auto deadline = Clock::now() + d;
    while (Clock::now() < deadline) {
      io.restart();
      io.run_for(5ms);
    }
  }

  static StartRequest request(std::string cmd, std::vector<std::string> args) {
    StartRequest r;
    r.spawn.command = cmd;
    r.spawn.args = args;
    r.spawn.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/", "LC_ALL=C"};
    r.spawn.cwd = "/";
    r.spawn.uid = getuid();
    r.spawn.gid = getgid();
    r.spawn.groups = {getgid()};
    r.spawn.stdin_mode = StdinMode::null;
    r.config.cmd = std::move(cmd);
    r.config.args = std::move(args);
    return r;
  }

  Started start(StartRequest r) {
    int error = -1;
    auto started = registry.start(std::move(r), &error);
    if (!started) {
      ADD_FAILURE() << "start failed: errno " << error;
      throw std::runtime_error("start failed");
    }
    EXPECT_EQ(error, 0);
    EXPECT_NE(started->process, nullptr);
    EXPECT_NE(started->subscription, nullptr);
    started_pids.push_back(started->process->pid());
    return std::move(*started);
  }

  // Collects until the end event (bounded).
  bool wait_end(Subscription& sub, Collected& c, std::chrono::milliseconds limit = 4s) {
    return run_until(
        [&] {
          c.take(sub);
          return c.end.has_value();
        },
        limit);
  }

  net::io_context io;
  Registry registry;
  std::vector<pid_t> started_pids;
};

Selector by_pid(pid_t pid) { return Selector{static_cast<uint32_t>(pid), std::nullopt}; }
Selector by_tag(std::string tag) { return Selector{std::nullopt, std::move(tag)}; }

}  // namespace

TEST(Registry, EchoProducesDataThenEndExitZero) {
  Harness h;
  auto s = h.start(Harness::request("/bin/echo", {"hi"}));
  EXPECT_GT(s.process->pid(), 0);
  EXPECT_FALSE(s.process->is_pty());
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c)) << "no end event";
  EXPECT_EQ(c.out, "hi\n");
  EXPECT_EQ(c.err, "");
  EXPECT_FALSE(c.data_after_end);
  ASSERT_GE(c.events.size(), 2u);
  EXPECT_EQ(c.events.front().kind, OutputEvent::Kind::data);
  EXPECT_EQ(c.events.back().kind, OutputEvent::Kind::end);
  EXPECT_EQ(c.end->exit_code, 0);
  EXPECT_TRUE(c.end->exited);
  EXPECT_EQ(c.end->status, "exit status 0");
  EXPECT_FALSE(c.end->error.has_value());
  EXPECT_TRUE(s.process->finished());
  EXPECT_EQ(s.process->config().cmd, "/bin/echo");
  EXPECT_EQ(s.process->config().args, (std::vector<std::string>{"hi"}));
}

TEST(Registry, StdoutStderrAndExitCode) {
  Harness h;
  auto s = h.start(Harness::request("sh", {"-c", "echo out; echo err >&2; exit 3"}));  // found via PATH
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c));
  EXPECT_EQ(c.out, "out\n");
  EXPECT_EQ(c.err, "err\n");
  EXPECT_EQ(c.end->exit_code, 3);
  EXPECT_TRUE(c.end->exited);
  EXPECT_EQ(c.end->status, "exit status 3");
  EXPECT_EQ(c.end->error, "exit status 3");
}

TEST(Registry, EnvironmentAndCwdReachTheChild) {
  Harness h;
  auto req = Harness::request("/bin/sh", {"-c", "echo \"$COVE_T\"; pwd"});
  req.spawn.env.push_back("COVE_T=value with spaces");
  req.spawn.cwd = "/tmp";
  auto s = h.start(std::move(req));
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c));
  EXPECT_EQ(c.out, "value with spaces\n/tmp\n");
  EXPECT_EQ(c.end->exit_code, 0);
}

TEST(Registry, MissingBinaryExits127) {
  Harness h;
  auto s = h.start(Harness::request("/nonexistent/cove-no-such-binary", {}));
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c));
  EXPECT_EQ(c.end->exit_code, 127);
  EXPECT_TRUE(c.end->exited);
  EXPECT_EQ(c.end->status, "exit status 127");
  EXPECT_EQ(c.end->error, "exit status 127");
  EXPECT_NE(c.err.find("cove-no-such-binary"), std::string::npos) << c.err;

  auto searched = h.start(Harness::request("cove-no-such-command-on-path", {}));
  Collected c2;
  ASSERT_TRUE(h.wait_end(*searched.subscription, c2));
  EXPECT_EQ(c2.end->exit_code, 127);
}

TEST(Registry, SigkillGivesMinusOneSignalKilled) {
  Harness h;
  auto s = h.start(Harness::request("/bin/sleep", {"30"}));
  const pid_t pid = s.process->pid();
  h.run_for(50ms);
  auto live = h.registry.find_live(by_pid(pid));
  ASSERT_EQ(live, s.process);
  EXPECT_FALSE(live->finished());
  const auto t0 = Clock::now();
  EXPECT_TRUE(live->signal(SIGKILL));
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c, 3s));
  EXPECT_LT(Clock::now() - t0, 3s);
  EXPECT_EQ(c.end->exit_code, -1);
  EXPECT_FALSE(c.end->exited);
  EXPECT_EQ(c.end->status, "signal: killed");
  EXPECT_EQ(c.end->error, "signal: killed");
  ASSERT_TRUE(h.run_until([&] { return h.registry.find_live(by_pid(pid)) == nullptr; }, 1s));
  EXPECT_EQ(h.registry.find_any(by_pid(pid)), s.process);
  EXPECT_EQ(h.registry.live_count(), 0u);
}

TEST(Registry, SigtermGivesSignalTerminated) {
  Harness h;
  auto s = h.start(Harness::request("/bin/sleep", {"30"}));
  h.run_for(50ms);
  EXPECT_TRUE(s.process->signal(SIGTERM));
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c, 3s));
  EXPECT_EQ(c.end->exit_code, -1);
  EXPECT_FALSE(c.end->exited);
  EXPECT_EQ(c.end->status, "signal: terminated");
}

TEST(Registry, LifetimeKillsAfterDeadline) {
  Harness h;
  auto req = Harness::request("/bin/sleep", {"30"});
  req.lifetime = 300ms;
  const auto t0 = Clock::now();
  auto s = h.start(std::move(req));
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c, 3s)) << "lifetime did not kill the process";
  const auto elapsed = Clock::now() - t0;
  EXPECT_GE(elapsed, 250ms);
  EXPECT_LT(elapsed, 3s);
  EXPECT_EQ(c.end->exit_code, -1);
  EXPECT_EQ(c.end->status, "signal: killed");
}

TEST(Registry, ZeroLifetimeMeansNoLimit) {
  Harness h;
  auto req = Harness::request("/bin/sh", {"-c", "sleep 0.3; echo done"});
  req.lifetime = 0ms;
  auto s = h.start(std::move(req));
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c, 3s));
  EXPECT_EQ(c.out, "done\n");
  EXPECT_EQ(c.end->exit_code, 0);
}

TEST(Registry, SignalReachesTheWholeProcessGroup) {
  Harness h;
  // The shell stays in the foreground waiting for its child; killing the group kills both.
  auto s = h.start(Harness::request("/bin/sh", {"-c", "sleep 30; echo not-reached"}));
  h.run_for(100ms);
  EXPECT_TRUE(s.process->signal(SIGKILL));
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c, 3s)) << "the sleep kept the pipes open";
  EXPECT_EQ(c.end->status, "signal: killed");
  EXPECT_EQ(c.out, "");
}

// envd.md §7.7: "SIGTERM/SIGKILL sent through SendSignal stops waiting for output and goes straight
// to wait" (handler.go SendSignal calls outCancel() first). Here the shell has already exited and
// a background child holds stdout open: SIGKILL must still end the process (and reach the group).
TEST(Registry, SignalAfterLeaderExitStopsWaitingForOutput) {
  Harness h;
  auto s = h.start(Harness::request("/bin/sh", {"-c", "sleep 30 & echo started"}));
  Collected c;
  ASSERT_TRUE(h.run_until([&] {
    c.take(*s.subscription);
    return c.out == "started\n";
  }));
  h.run_for(300ms);  // the shell exits and is reaped; `sleep` still holds the pipes
  ASSERT_FALSE(c.end.has_value()) << "end before the pipes closed";
  ASSERT_NE(h.registry.find_live(by_pid(s.process->pid())), nullptr);

  EXPECT_TRUE(s.process->signal(SIGKILL));
  EXPECT_TRUE(h.wait_end(*s.subscription, c, 2s))
      << "SIGKILL after the leader exited did not end the process (still waiting for the "
         "background child's output)";
  if (c.end) {
    EXPECT_TRUE(c.end->exited);  // the shell itself exited normally before the signal
    EXPECT_EQ(c.end->exit_code, 0);
  }
}

// Same situation with the Start lifetime (Connect-Timeout-Ms): envd's exec.CommandContext deadline
// cancels the output wait too, so the process ends at the deadline.
TEST(Registry, LifetimeAppliesWhileDescendantHoldsOutput) {
  Harness h;
  auto req = Harness::request("/bin/sh", {"-c", "sleep 30 & echo started"});
  req.lifetime = 400ms;
  auto s = h.start(std::move(req));
  Collected c;
  EXPECT_TRUE(h.wait_end(*s.subscription, c, 2500ms))
      << "the lifetime deadline did not end a process whose background child holds stdout";
  EXPECT_EQ(c.out, "started\n");
}

TEST(Registry, PtyReportsWindowSize) {
  Harness h;
  auto req = Harness::request("/bin/sh", {"-c", "stty size"});
  winsize ws{};
  ws.ws_row = 24;
  ws.ws_col = 80;
  req.spawn.pty = ws;
  auto s = h.start(std::move(req));
  EXPECT_TRUE(s.process->is_pty());
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c));
  EXPECT_NE(c.pty.find("24 80"), std::string::npos) << "pty output: " << c.pty;
  EXPECT_EQ(c.out, "");
  EXPECT_EQ(c.err, "");
  EXPECT_EQ(c.end->exit_code, 0);
}

TEST(Registry, PtyInputAndResize) {
  Harness h;
  auto req = Harness::request("/bin/sh", {"-c", "read line; stty size; echo \"got:$line\""});
  winsize ws{};
  ws.ws_row = 24;
  ws.ws_col = 80;
  req.spawn.pty = ws;
  auto s = h.start(std::move(req));
  h.run_for(100ms);
  auto resized = s.process->resize(100, 30);
  EXPECT_TRUE(resized.ok()) << resized.message;
  std::optional<InputError> written;
  net::co_spawn(
      h.io, [&]() -> net::awaitable<void> { written = co_await s.process->write_pty("hello\n"); }, net::detached);
  Collected c;
  ASSERT_TRUE(h.wait_end(*s.subscription, c));
  ASSERT_TRUE(written.has_value());
  EXPECT_TRUE(written->ok()) << written->message;
  EXPECT_NE(c.pty.find("30 100"), std::string::npos) << c.pty;
  EXPECT_NE(c.pty.find("got:hello"), std::string::npos) << c.pty;
  EXPECT_EQ(c.end->exit_code, 0);
  // Stdin-only operations are refused for a PTY process.
  EXPECT_EQ(s.process->close_stdin().kind, InputError::Kind::not_supported);
}

TEST(Registry, StdinPipeWriteAndClose) {
  Harness h;
  auto req = Harness::request("/bin/cat", {});
  req.spawn.stdin_mode = StdinMode::pipe;
  auto s = h.start(std::move(req));
  std::optional<InputError> w1, w2;
  net::co_spawn(
      h.io,
      [&]() -> net::awaitable<void> {
        w1 = co_await s.process->write_stdin("hello ");
        w2 = co_await s.process->write_stdin("world\n");
      },
      net::detached);
  Collected c;
  ASSERT_TRUE(h.run_until([&] {
    c.take(*s.subscription);
    return c.out == "hello world\n";
  }));
  ASSERT_TRUE(w1 && w2);
  EXPECT_TRUE(w1->ok());
  EXPECT_TRUE(w2->ok());
  EXPECT_FALSE(c.end.has_value());  // cat waits for EOF
  EXPECT_TRUE(s.process->close_stdin().ok());
  ASSERT_TRUE(h.wait_end(*s.subscription, c, 3s)) << "cat did not see EOF";
  EXPECT_EQ(c.end->exit_code, 0);
  // Resize needs a PTY.
  EXPECT_EQ(s.process->resize(80, 24).kind, InputError::Kind::not_supported);
}

TEST(Registry, FindByPidAndTag) {
  Harness h;
  auto alpha_req = Harness::request("/bin/sleep", {"30"});
  alpha_req.tag = "alpha";
  auto beta_req = Harness::request("/bin/sleep", {"30"});
  beta_req.tag = "beta";
  auto alpha = h.start(std::move(alpha_req));
  auto untagged = h.start(Harness::request("/bin/sleep", {"30"}));
  auto beta = h.start(std::move(beta_req));
  h.run_for(30ms);

  EXPECT_EQ(h.registry.live_count(), 3u);
  EXPECT_EQ(h.registry.list_live().size(), 3u);
  std::set<pid_t> listed;
  for (const auto& p : h.registry.list_live()) listed.insert(p->pid());
  EXPECT_EQ(listed, (std::set<pid_t>{alpha.process->pid(), beta.process->pid(), untagged.process->pid()}));

  EXPECT_EQ(h.registry.find_live(by_tag("alpha")), alpha.process);
  EXPECT_EQ(h.registry.find_live(by_tag("beta")), beta.process);
  EXPECT_EQ(h.registry.find_any(by_tag("beta")), beta.process);
  EXPECT_EQ(h.registry.find_live(by_tag("gamma")), nullptr);
  EXPECT_EQ(h.registry.find_any(by_tag("gamma")), nullptr);
  EXPECT_EQ(h.registry.find_live(by_pid(untagged.process->pid())), untagged.process);
  EXPECT_EQ(h.registry.find_live(by_pid(beta.process->pid())), beta.process);
  EXPECT_EQ(h.registry.find_any(by_pid(alpha.process->pid())), alpha.process);
  EXPECT_EQ(h.registry.find_live(Selector{}), nullptr);
  EXPECT_EQ(beta.process->tag(), "beta");
  EXPECT_FALSE(untagged.process->tag().has_value());

  // Kill beta only: it leaves the live set but stays findable (retained exit) by pid and tag.
  const pid_t beta_pid = beta.process->pid();
  EXPECT_TRUE(beta.process->signal(SIGKILL));
  Collected c;
  ASSERT_TRUE(h.wait_end(*beta.subscription, c, 3s));
  ASSERT_TRUE(h.run_until([&] { return h.registry.live_count() == 2u; }, 1s));
  EXPECT_EQ(h.registry.find_live(by_tag("beta")), nullptr);
  EXPECT_EQ(h.registry.find_live(by_pid(beta_pid)), nullptr);
  EXPECT_EQ(h.registry.find_any(by_tag("beta")), beta.process);
  EXPECT_EQ(h.registry.find_any(by_pid(beta_pid)), beta.process);
  EXPECT_EQ(h.registry.find_live(by_tag("alpha")), alpha.process);

  for (auto* s : {&alpha, &untagged}) EXPECT_TRUE(s->process->signal(SIGKILL));
  ASSERT_TRUE(h.run_until([&] { return h.registry.live_count() == 0u; }, 3s));
}

TEST(Registry, ExitedProcessReplaysUnreadOutputToLateSubscriber) {
  Harness h;
  auto s = h.start(Harness::request("/bin/sh", {"-c", "echo late; echo err-late >&2; exit 5"}));
  const pid_t pid = s.process->pid();
  std::weak_ptr<Process> weak = s.process;
  s.subscription.reset();  // the client went away before any output was read
  s.process.reset();
  ASSERT_TRUE(h.run_until([&] { return h.registry.find_live(by_pid(pid)) == nullptr; }));

  auto exited = h.registry.find_any(by_pid(pid));
  ASSERT_NE(exited, nullptr) << "exited process not retained";
  EXPECT_EQ(exited, weak.lock());
  EXPECT_TRUE(exited->finished());
  auto late = exited->output().subscribe(true);
  Collected c;
  c.take(*late);
  EXPECT_EQ(c.out, "late\n");
  EXPECT_EQ(c.err, "err-late\n");
  ASSERT_TRUE(c.end.has_value());
  EXPECT_EQ(c.end->exit_code, 5);
  EXPECT_EQ(c.end->status, "exit status 5");
  EXPECT_EQ(c.events.back().kind, OutputEvent::Kind::end);

  // A second late subscriber gets only the end (the replay was consumed).
  auto later = exited->output().subscribe(true);
  Collected c2;
  c2.take(*later);
  EXPECT_EQ(c2.out, "");
  ASSERT_TRUE(c2.end.has_value());
  EXPECT_EQ(c2.end->exit_code, 5);
}

TEST(Registry, ShortRetentionExpires) {
  net::io_context io;
  Registry::Limits limits;
  limits.exited_retention = std::chrono::seconds(0);
  Registry registry(io.get_executor(), limits);
  registry.start_reaper();
  auto req = Harness::request("/bin/true", {});
  int error = 0;
  auto s = registry.start(std::move(req), &error);
  ASSERT_TRUE(s.has_value());
  const pid_t pid = s->process->pid();
  const auto deadline = Clock::now() + 4s;
  while (registry.live_count() > 0 && Clock::now() < deadline) {
    io.restart();
    io.run_for(5ms);
  }
  ASSERT_EQ(registry.live_count(), 0u);
  EXPECT_EQ(registry.find_any(by_pid(pid)), nullptr);  // zero retention: gone at once
  waitpid(pid, nullptr, WNOHANG);
}

// A subscriber that stops reading holds the process back through its pipe instead of the agent
// buffering without bound; other processes' output keeps flowing; nothing is lost on resume.
TEST(Registry, SlowSubscriberGetsBackpressureWithBoundedMemory) {
  Harness h;
  constexpr size_t kTotal = 8 * 1024 * 1024;
  auto big = h.start(Harness::request("/bin/sh", {"-c", "head -c 8388608 /dev/zero"}));
  // Far more output than the per-stream limit (1 MiB) plus the pipe buffer is offered.
  h.run_for(500ms);
  auto* queued = big.subscription.get();
  size_t held = 0;
  {
    // Take what was queued by now (the io_context is not running, so nothing more arrives).
    Collected first;
    first.take(*queued);
    held = first.out.size();
    EXPECT_FALSE(first.end.has_value()) << "the writer finished although nobody read its output";
    EXPECT_LE(held, (1u << 20) + 64 * 1024) << "queued beyond the per-stream limit";
    EXPECT_GT(held, 0u);
    // Meanwhile another process runs to completion undisturbed.
    auto other = h.start(Harness::request("/bin/echo", {"independent"}));
    Collected c;
    EXPECT_TRUE(h.wait_end(*other.subscription, c, 2s));
    EXPECT_EQ(c.out, "independent\n");
    // Resume reading: everything arrives, exactly once.
    Collected rest;
    ASSERT_TRUE(h.wait_end(*queued, rest, 10s));
    EXPECT_EQ(held + rest.out.size(), kTotal);
    ASSERT_TRUE(rest.end.has_value());
    EXPECT_EQ(rest.end->exit_code, 0);
  }
}

TEST(Registry, WatchedChildExitGoesToItsCallbackNotTheProcessList) {
  Harness h;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(7);
  std::optional<int> status;
  h.registry.watch_exit(pid, [&](int s) { status = s; });
  ASSERT_TRUE(h.run_until([&] { return status.has_value(); }));
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 7);
  EXPECT_EQ(h.registry.live_count(), 0u);
}
