// Root-only integration test of the container backend: real sandboxes from the Debian base rootfs
// with the real agent, reached through the host channel. Needs root, the built cove-agent and
// cove-sandbox-init (build/bin), and the base rootfs (rootfs-builder/build-base.sh builds or
// reuses it). Prints start/destroy latency figures.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/container/cgroups.hpp"
#include "runtime/container/container_runtime.hpp"
#include "runtime/container/host_files.hpp"
#include "runtime/container/idmap.hpp"
#include "runtime/container/instance.hpp"

namespace cove::shim::container {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string base_rootfs() {
  static std::string path = [] {
    std::string cmd = std::string(COVE_SOURCE_DIR) + "/rootfs-builder/build-base.sh";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return std::string();
    char buf[4096] = {};
    std::string out;
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }();
  return path;
}

class ContainerSandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "this integration test needs root";
    rootfs_ = base_rootfs();
    ASSERT_TRUE(!rootfs_.empty() && fs::is_directory(rootfs_ + "/usr/bin")) << "no base rootfs";
    char tmpl[] = "/tmp/cove-itest-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    scratch_ = tmpl;
    // The agent layer the integrator makes: usr/local/bin/cove-agent, root-owned.
    agent_layer_ = scratch_ + "/agent-layer";
    fs::create_directories(agent_layer_ + "/usr/local/bin");
    for (auto d : {"", "/usr", "/usr/local", "/usr/local/bin"}) chmod((agent_layer_ + d).c_str(), 0755);
    fs::copy_file(std::string(COVE_BIN_DIR) + "/cove-agent", agent_layer_ + "/usr/local/bin/cove-agent");
    chmod((agent_layer_ + "/usr/local/bin/cove-agent").c_str(), 0755);
    state_ = scratch_ + "/state";

    work_.emplace(io_.get_executor());
    io_thread_ = std::thread([this] { io_.run(); });
    options_.state_dir = state_;
    options_.init_path = std::string(COVE_BIN_DIR) + "/cove-sandbox-init";
    runtime_ = std::make_unique<ContainerRuntime>(io_.get_executor(), options_, network_);
  }

  void TearDown() override {
    if (runtime_) {
      for (const auto& id : runtime_->instances()) runtime_->destroy(id);
    }
    runtime_.reset();
    if (work_) work_->reset();
    io_.stop();
    if (io_thread_.joinable()) io_thread_.join();
    if (!scratch_.empty()) remove_tree(scratch_);
  }

  SandboxSpec spec(const std::string& id, int64_t slot) {
    SandboxSpec s;
    s.id = id;
    s.slot = slot;
    s.layers = {agent_layer_, rootfs_};
    s.cpu_count = 1;
    s.memory_mb = 256;
    s.disk_size_mb = 64;
    s.pids_max = 512;
    s.allow_internet_access = false;
    return s;
  }

  // The sandbox's init pid, from its instance record.
  pid_t init_pid(const std::string& id) {
    auto r = load_instance(state_ + "/sandboxes/" + id + "/instance.json");
    return r ? r->pid : 0;
  }

  // One HTTP request through the host channel; returns the status line. Retries while the agent
  // is not listening yet.
  std::string request(ContainerRuntime& rt, const std::string& id, const std::string& target,
                      std::chrono::milliseconds patience = std::chrono::seconds(5)) {
    auto deadline = Clock::now() + patience;
    for (;;) {
      auto fut = net::co_spawn(
          io_,
          [&rt, id, target]() -> net::awaitable<std::string> {
            std::string sid = id;
            Socket s = co_await rt.connect(sid, 49983);
            std::string req = "GET " + target + " HTTP/1.1\r\nHost: sandbox\r\nConnection: close\r\n\r\n";
            co_await net::async_write(s, net::buffer(req), net::use_awaitable);
            net::streambuf buf;
            co_await net::async_read_until(s, buf, "\r\n", net::use_awaitable);
            std::string line(net::buffers_begin(buf.data()), net::buffers_end(buf.data()));
            co_return line.substr(0, line.find("\r\n"));
          },
          net::use_future);
      try {
        return fut.get();
      } catch (const boost::system::system_error& e) {
        if (e.code() != boost::system::errc::connection_refused || Clock::now() > deadline) throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // No trace on the host: cgroups, sandbox dir, loop devices, mounts.
  void expect_no_trace(const std::string& id) {
    CgroupPlan plan = plan_cgroups(detect_cgroup_layout(), id);
    for (const auto& g : plan.groups()) EXPECT_FALSE(fs::exists(g)) << "cgroup left: " << g;
    EXPECT_FALSE(fs::exists(state_ + "/sandboxes/" + id));
    for (const auto& e : fs::directory_iterator("/sys/block")) {
      std::string backing;
      if (try_read_text(e.path().string() + "/loop/backing_file", backing)) {
        EXPECT_EQ(backing.find(state_), std::string::npos) << "loop device left: " << e.path();
      }
    }
    EXPECT_EQ(read_text("/proc/self/mountinfo").find(scratch_), std::string::npos) << "mount left on the host";
  }

  std::string rootfs_, scratch_, agent_layer_, state_;
  net::io_context io_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::thread io_thread_;
  HostNetwork network_{NetworkConfig{}};
  ContainerRuntimeOptions options_;
  std::unique_ptr<ContainerRuntime> runtime_;
};

TEST_F(ContainerSandbox, StartsServesAndIsIsolated) {
  const std::string id = "itest-basic";
  runtime_->start(spec(id, 3));
  EXPECT_EQ(request(*runtime_, id, "/health"), "HTTP/1.1 204 No Content");

  pid_t pid = init_pid(id);
  ASSERT_GT(pid, 0);
  // Root inside is the slot's first host uid; gids the same.
  std::string uid_map = read_text("/proc/" + std::to_string(pid) + "/uid_map");
  std::string gid_map = read_text("/proc/" + std::to_string(pid) + "/gid_map");
  auto squash = [](std::string s) {
    std::string out;
    bool space = false;
    for (char c : s) {
      if (c == ' ' || c == '\n') {
        space = !out.empty();
      } else {
        if (space) out += ' ';
        space = false;
        out += c;
      }
    }
    return out;
  };
  EXPECT_EQ(squash(uid_map), "0 " + std::to_string(host_base_for_slot(3)) + " 65536");
  EXPECT_EQ(squash(gid_map), squash(uid_map));
  EXPECT_EQ(read_text("/proc/" + std::to_string(pid) + "/setgroups"), "allow\n");
  // PID 1 of its namespace, and the agent is what runs.
  std::string status = read_text("/proc/" + std::to_string(pid) + "/status");
  EXPECT_NE(status.find("NSpid:\t" + std::to_string(pid) + "\t1\n"), std::string::npos) << status;
  EXPECT_EQ(read_text("/proc/" + std::to_string(pid) + "/comm"), "cove-agent\n");
  EXPECT_NE(status.find("Seccomp:\t2\n"), std::string::npos);               // filtered
  EXPECT_NE(status.find("CapBnd:\t00000000a80425fb\n"), std::string::npos);  // Docker's default set

  // Hostname = sandbox id, read inside its UTS namespace.
  {
    int self = open("/proc/self/ns/uts", O_RDONLY);
    int theirs = open(("/proc/" + std::to_string(pid) + "/ns/uts").c_str(), O_RDONLY);
    ASSERT_GE(self, 0);
    ASSERT_GE(theirs, 0);
    ASSERT_EQ(setns(theirs, CLONE_NEWUTS), 0);
    char name[256] = {};
    gethostname(name, sizeof name);
    ASSERT_EQ(setns(self, CLONE_NEWUTS), 0);
    close(self);
    close(theirs);
    EXPECT_EQ(std::string(name), id);
  }

  // Limits.
  CgroupPlan plan = plan_cgroups(detect_cgroup_layout(), id);
  if (plan.v2) {
    EXPECT_EQ(read_text(plan.unified + "/memory.max"), std::to_string(256 << 20) + "\n");
    EXPECT_EQ(read_text(plan.unified + "/pids.max"), "512\n");
  } else {
    EXPECT_EQ(read_text(plan.memory + "/memory.limit_in_bytes"), std::to_string(256 << 20) + "\n");
    EXPECT_EQ(read_text(plan.pids + "/pids.max"), "512\n");
    EXPECT_EQ(read_text(plan.cpu + "/cpu.cfs_quota_us"), "100000\n");
  }
  auto procs = cgroup_pids(plan);
  EXPECT_NE(std::find(procs.begin(), procs.end(), pid), procs.end());

  // Nothing of the host is visible: its mount table names no host path, and the host's table has
  // gained nothing.
  std::string inside = read_text("/proc/" + std::to_string(pid) + "/mountinfo");
  EXPECT_EQ(inside.find(scratch_), std::string::npos) << inside;
  EXPECT_EQ(inside.find(rootfs_), std::string::npos) << inside;
  EXPECT_EQ(read_text("/proc/self/mountinfo").find(scratch_), std::string::npos);
  EXPECT_TRUE(fs::exists("/proc/" + std::to_string(pid) + "/root/run/cove/agent.sock"));
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(pid) + "/root" + state_));

  // Stats.
  auto st = runtime_->stats(id);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->cpu_count, 1);
  EXPECT_EQ(st->memory_total, 256ull << 20);
  EXPECT_GT(st->memory_used, 0u);
  EXPECT_GT(st->cpu_usage_ns, 0u);
  EXPECT_GT(st->disk_total, 50ull << 20);
  EXPECT_LE(st->disk_total, 64ull << 20);

  // The disk is 64 MiB: writing 100 MiB ends in ENOSPC, inside this sandbox only.
  {
    std::string big = "/proc/" + std::to_string(pid) + "/root/root/big";
    int fd = open(big.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    std::string chunk(1 << 20, 'x');
    int err = 0;
    for (int i = 0; i < 100 && !err; ++i) {
      if (write(fd, chunk.data(), chunk.size()) < 0) err = errno;
    }
    if (!err && fsync(fd) != 0) err = errno;
    close(fd);
    EXPECT_EQ(err, ENOSPC);
    auto full = runtime_->stats(id);
    ASSERT_TRUE(full);
    EXPECT_GT(full->disk_used, 50ull << 20);
    unlink(big.c_str());
  }

  runtime_->destroy(id);
  expect_no_trace(id);
  EXPECT_FALSE(runtime_->stats(id));
  EXPECT_NO_THROW(runtime_->destroy(id));  // idempotent
  auto fut = net::co_spawn(
      io_,
      [this, id]() -> net::awaitable<boost::system::error_code> {
        try {
          std::string sid = id;
          Socket s = co_await runtime_->connect(sid, 49983);
        } catch (const boost::system::system_error& e) {
          co_return e.code();
        }
        co_return boost::system::error_code();
      },
      net::use_future);
  EXPECT_EQ(fut.get(), boost::system::errc::no_such_process);
}

TEST_F(ContainerSandbox, OutOfMemoryKillsTheHungryProcessNotTheAgent) {
  const std::string id = "itest-oom";
  SandboxSpec s = spec(id, 4);
  s.memory_mb = 64;
  runtime_->start(s);
  ASSERT_EQ(request(*runtime_, id, "/health"), "HTTP/1.1 204 No Content");
  CgroupPlan plan = plan_cgroups(detect_cgroup_layout(), id);

  // A process joins the sandbox's cgroups and asks for 256 MiB.
  pid_t child = fork();
  if (child == 0) {
    for (const auto& g : plan.groups()) try_write_text(g + "/cgroup.procs", std::to_string(getpid()));
    execl("/usr/bin/python3", "python3", "-c", "b = bytearray(256 << 20); b[::4096] = b'x' * len(b[::4096])",
          nullptr);
    _exit(127);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "status " << wstatus;
  EXPECT_EQ(request(*runtime_, id, "/health"), "HTTP/1.1 204 No Content");
  EXPECT_TRUE(runtime_->stats(id).has_value());
  runtime_->destroy(id);
  expect_no_trace(id);
}

TEST_F(ContainerSandbox, ReportsExitAndRecoversAfterRestart) {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::string> exited;
  runtime_->on_exit([&](const std::string& id) {
    std::lock_guard lock(m);
    exited.push_back(id);
    cv.notify_all();
  });
  runtime_->start(spec("itest-a", 5));
  runtime_->start(spec("itest-b", 6));
  EXPECT_THROW(runtime_->start(spec("itest-b", 7)), RuntimeError);  // same id twice
  ASSERT_EQ(request(*runtime_, "itest-b", "/health"), "HTTP/1.1 204 No Content");

  // A shim restart: a second runtime over the same state finds both again.
  auto second = std::make_unique<ContainerRuntime>(io_.get_executor(), options_, network_);
  auto ids = second->instances();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"itest-a", "itest-b"}));
  EXPECT_TRUE(second->recover("itest-a"));
  EXPECT_TRUE(second->recover("itest-b"));
  EXPECT_FALSE(second->recover("itest-none"));
  EXPECT_EQ(request(*second, "itest-b", "/health"), "HTTP/1.1 204 No Content");

  // The init of itest-a dies by itself: the callback fires, destroy was not asked for.
  ASSERT_EQ(kill(init_pid("itest-a"), SIGKILL), 0);
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return !exited.empty(); }));
    EXPECT_EQ(exited, std::vector<std::string>{"itest-a"});
  }
  EXPECT_FALSE(runtime_->stats("itest-a"));
  EXPECT_TRUE(runtime_->stats("itest-b"));

  // Destroyed through the second runtime: for the first one, itest-b exited by itself.
  second->destroy("itest-b");
  expect_no_trace("itest-b");
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return exited.size() == 2; }));
    EXPECT_EQ(exited[1], "itest-b");
  }
  runtime_->destroy("itest-a");
  expect_no_trace("itest-a");
  runtime_->destroy("itest-b");  // already gone: fine
  EXPECT_TRUE(runtime_->instances().empty());

  // A destroy through the runtime that watches does not report an exit.
  runtime_->start(spec("itest-c", 7));
  runtime_->destroy("itest-c");
  expect_no_trace("itest-c");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::lock_guard lock(m);
  EXPECT_EQ(exited.size(), 2u);
}

TEST_F(ContainerSandbox, FailedStartCleansUp) {
  SandboxSpec s = spec("itest-bad", 8);
  s.layers = {scratch_ + "/empty-layer"};  // no agent in it
  fs::create_directories(s.layers[0]);
  try {
    runtime_->start(s);
    ADD_FAILURE() << "start without an agent succeeded";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("exec"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find(scratch_), std::string::npos) << "host path in the error: " << e.what();
  }
  expect_no_trace("itest-bad");
  EXPECT_THROW(runtime_->start(spec("../escape", 9)), RuntimeError);
  SandboxSpec missing = spec("itest-missing", 9);
  missing.layers = {scratch_ + "/nope"};
  EXPECT_THROW(runtime_->start(missing), RuntimeError);
  EXPECT_FALSE(fs::exists(state_ + "/sandboxes/itest-missing"));
}

TEST_F(ContainerSandbox, StartAndDestroyLatency) {
  constexpr int kRuns = 20;
  std::vector<double> start_ms, ready_ms, destroy_ms;
  runtime_->start(spec("itest-warm", 10));  // makes the cached empty image
  runtime_->destroy("itest-warm");
  for (int i = 0; i < kRuns; ++i) {
    std::string id = "itest-lat-" + std::to_string(i);
    auto t0 = Clock::now();
    runtime_->start(spec(id, 11 + i));
    auto t1 = Clock::now();
    ASSERT_EQ(request(*runtime_, id, "/health"), "HTTP/1.1 204 No Content");
    auto t2 = Clock::now();
    runtime_->destroy(id);
    auto t3 = Clock::now();
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    start_ms.push_back(ms(t1 - t0));
    ready_ms.push_back(ms(t2 - t0));
    destroy_ms.push_back(ms(t3 - t2));
    expect_no_trace(id);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto max = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  printf("container start (spawn → agent exec'd): median %.2f ms, max %.2f ms\n", median(start_ms), max(start_ms));
  printf("start → first /health 204:              median %.2f ms, max %.2f ms\n", median(ready_ms), max(ready_ms));
  printf("destroy:                                median %.2f ms, max %.2f ms\n", median(destroy_ms), max(destroy_ms));
  // Generous bounds: a regression by an order of magnitude fails, scheduler noise does not.
  EXPECT_LT(median(start_ms), 100.0);
  EXPECT_LT(median(destroy_ms), 500.0);
}

}  // namespace
}  // namespace cove::shim::container
