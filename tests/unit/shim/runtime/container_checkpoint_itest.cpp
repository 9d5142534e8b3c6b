// Root-only integration test of warm pause (freezer), stop, disk export and CRIU checkpoints of
// real container sandboxes from the base rootfs. The CRIU tests skip only when the CRIU binary
// (tools/criu.sh) is missing. Most run a stand-in agent (python, in the agent layer) that shows
// its own state: the real agent needs its /freeze cooperation (io_uring, host connections) before
// a dump, which is the lifecycle's business, not the runtime's.
// Prints freeze/thaw, dump/restore latencies and image sizes.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "runtime/container/cgroups.hpp"
#include "runtime/container/container_runtime.hpp"
#include "runtime/container/host_files.hpp"
#include "runtime/container/instance.hpp"

namespace cove::shim::container {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

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

// Speaks the host-channel handshake; GET /state answers "pid=<its pid> hits=<n> counter=<c>
// child=<pid>": the counter is a child shell that keeps counting in /tmp (a tmpfs: memory).
constexpr const char* kStandInAgent = R"PY(#!/usr/bin/python3
import os, socket, subprocess, sys
args = sys.argv[1:]
path = args[args.index('-unix') + 1]
os.makedirs(os.path.dirname(path), exist_ok=True)
hits = 0
child = subprocess.Popen(['/bin/sh', '-c', 'i=0; while true; do i=$((i+1)); echo $i > /tmp/counter; sleep 0.05; done'])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(16)
while True:
    c, _ = s.accept()
    try:
        line = b''
        while not line.endswith(b'\n'):
            b = c.recv(1)
            if not b:
                break
            line += b
        c.sendall(b'OK 1\n')
        data = c.recv(65536)
        hits += 1
        try:
            counter = open('/tmp/counter').read().strip()
        except OSError:
            counter = '0'
        body = ('pid=%d hits=%d counter=%s child=%d\n' % (os.getpid(), hits, counter, child.pid)).encode()
        c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n' % len(body) + body)
    except OSError:
        pass
    finally:
        c.close()
)PY";

class Checkpoints : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "this integration test needs root";
    rootfs_ = base_rootfs();
    ASSERT_TRUE(!rootfs_.empty() && fs::is_directory(rootfs_ + "/usr/bin")) << "no base rootfs";
    char tmpl[] = "/tmp/cove-ckpt-itest-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    scratch_ = tmpl;
    agent_layer_ = make_layer("agent-layer", [](const std::string& to) {
      fs::copy_file(std::string(COVE_BIN_DIR) + "/cove-agent", to);
    });
    stand_in_layer_ = make_layer("stand-in-layer", [](const std::string& to) { std::ofstream(to) << kStandInAgent; });
    state_ = scratch_ + "/state";
    network_.ensure();
    work_.emplace(io_.get_executor());
    io_thread_ = std::thread([this] { io_.run(); });
    options_.state_dir = state_;
    options_.init_path = std::string(COVE_BIN_DIR) + "/cove-sandbox-init";
    options_.network = NetworkConfig{kBridge, kSubnet};
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
    network_.teardown();
    if (!scratch_.empty()) remove_tree(scratch_);
  }

  template <typename Fill>
  std::string make_layer(const std::string& name, Fill fill) {
    std::string layer = scratch_ + "/" + name;
    fs::create_directories(layer + "/usr/local/bin");
    for (auto d : {"", "/usr", "/usr/local", "/usr/local/bin"}) chmod((layer + d).c_str(), 0755);
    fill(layer + "/usr/local/bin/cove-agent");
    chmod((layer + "/usr/local/bin/cove-agent").c_str(), 0755);
    return layer;
  }

  static bool criu_present() { return access(ContainerRuntimeOptions{}.criu_path.c_str(), X_OK) == 0; }

  SandboxSpec spec(const std::string& id, int64_t slot, bool stand_in) {
    SandboxSpec s;
    s.id = id;
    s.slot = slot;
    s.layers = {stand_in ? stand_in_layer_ : agent_layer_, rootfs_};
    s.cpu_count = 1;
    s.memory_mb = 256;
    s.disk_size_mb = 64;
    s.pids_max = 512;
    s.allow_internet_access = true;
    return s;
  }

  pid_t init_pid(const std::string& id) {
    auto r = load_instance(state_ + "/sandboxes/" + id + "/instance.json");
    return r ? r->pid : 0;
  }

  // One GET through the host channel; the whole response (status line … body).
  std::string get(const std::string& id, const std::string& target,
                  std::chrono::milliseconds patience = std::chrono::seconds(5)) {
    auto deadline = Clock::now() + patience;
    for (;;) {
      auto fut = net::co_spawn(
          io_,
          [this, id, target]() -> net::awaitable<std::string> {
            std::string sid = id;
            Socket s = co_await runtime_->connect(sid, 49983);
            std::string req = "GET " + target + " HTTP/1.1\r\nHost: sandbox\r\nConnection: close\r\n\r\n";
            co_await net::async_write(s, net::buffer(req), net::use_awaitable);
            std::string out;
            boost::system::error_code ec;
            co_await net::async_read(s, net::dynamic_buffer(out), net::redirect_error(net::use_awaitable, ec));
            co_return out;
          },
          net::use_future);
      try {
        return fut.get();
      } catch (const boost::system::system_error& e) {
        if (e.code() != boost::system::errc::connection_refused || Clock::now() > deadline) throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  // "key=value" out of the stand-in's /state body.
  static long field(const std::string& response, const std::string& key) {
    auto at = response.find(key + "=");
    if (at == std::string::npos) return -1;
    return std::stol(response.substr(at + key.size() + 1));
  }

  boost::system::error_code connect_error(const std::string& id) {
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
    return fut.get();
  }

  // The sandbox's IPv4 addresses as its own network namespace lists them.
  static std::string addresses_of(pid_t pid) {
    std::string trie;
    try_read_text("/proc/" + std::to_string(pid) + "/net/fib_trie", trie);
    return trie;
  }

  static uint64_t allocated_bytes(const std::string& dir) {
    uint64_t total = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      struct stat st;
      if (lstat(e.path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<uint64_t>(st.st_blocks) * 512;
    }
    return total;
  }

  void expect_no_trace(const std::string& id) {
    CgroupPlan plan = plan_cgroups(detect_cgroup_layout(), id);
    for (const auto& g : plan.groups()) EXPECT_FALSE(fs::exists(g)) << "cgroup left: " << g;
    EXPECT_FALSE(fs::exists(state_ + "/sandboxes/" + id));
  }

  static constexpr const char* kBridge = "cove-ckit";
  static constexpr const char* kSubnet = "10.79.0.0/16";
  std::string rootfs_, scratch_, agent_layer_, stand_in_layer_, state_;
  net::io_context io_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::thread io_thread_;
  HostNetwork network_{NetworkConfig{kBridge, kSubnet}};
  ContainerRuntimeOptions options_;
  std::unique_ptr<ContainerRuntime> runtime_;
};

TEST_F(Checkpoints, FreezeThawStopExportAndKeptDisk) {
  const std::string id = "ck-warm";
  runtime_->start(spec(id, 40, true));
  ASSERT_EQ(field(get(id, "/state"), "pid"), 1);
  pid_t pid = init_pid(id);
  CgroupPlan plan = plan_cgroups(detect_cgroup_layout(), id);
  std::ofstream("/proc/" + std::to_string(pid) + "/root/root/marker") << "kept";

  std::string counter = "/proc/" + std::to_string(pid) + "/root/tmp/counter";
  for (int i = 0; i < 500 && !fs::exists(counter); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(counter));

  // Warm pause: each way measured; idempotent both ways.
  std::vector<double> freeze_ms, thaw_ms;
  for (int i = 0; i < 20; ++i) {
    auto t0 = Clock::now();
    runtime_->freeze(id);
    freeze_ms.push_back(ms_since(t0));
    EXPECT_TRUE(cgroups_frozen(plan));
    auto t1 = Clock::now();
    runtime_->thaw(id);
    thaw_ms.push_back(ms_since(t1));
    EXPECT_FALSE(cgroups_frozen(plan));
  }
  std::sort(freeze_ms.begin(), freeze_ms.end());
  std::sort(thaw_ms.begin(), thaw_ms.end());
  printf("freeze: median %.3f ms, max %.3f ms; thaw: median %.3f ms, max %.3f ms\n", freeze_ms[10], freeze_ms.back(),
         thaw_ms[10], thaw_ms.back());
  EXPECT_LT(freeze_ms[10], 5.0);
  EXPECT_LT(thaw_ms[10], 5.0);
  runtime_->freeze(id);
  EXPECT_NO_THROW(runtime_->freeze(id));

  // The processes really stand still: the counting child (every 50 ms) does not count.
  std::string frozen_at = read_text(counter);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(read_text(counter), frozen_at);

  // A disk export needs a frozen (or stopped) sandbox; it is sparse.
  std::string exported = scratch_ + "/exported.img";
  runtime_->export_disk(id, exported);
  struct stat st;
  ASSERT_EQ(stat(exported.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 64ll << 20);
  EXPECT_LT(st.st_blocks * 512, 32ll << 20);
  runtime_->thaw(id);
  EXPECT_NO_THROW(runtime_->thaw(id));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_NE(read_text(counter), frozen_at);
  ASSERT_EQ(field(get(id, "/state"), "pid"), 1);
  EXPECT_THROW(runtime_->export_disk(id, scratch_ + "/not.img"), RuntimeError);
  EXPECT_FALSE(fs::exists(scratch_ + "/not.img"));

  // Stop: nothing runs, the disk and record stay, it is not running for anyone.
  runtime_->stop(id);
  EXPECT_NO_THROW(runtime_->stop(id));
  EXPECT_FALSE(runtime_->stats(id));
  EXPECT_EQ(connect_error(id), boost::system::errc::no_such_process);
  EXPECT_FALSE(runtime_->recover(id));
  EXPECT_THROW(runtime_->freeze(id), RuntimeError);
  EXPECT_TRUE(fs::exists(state_ + "/sandboxes/" + id + "/disk.img"));
  auto ids = runtime_->instances();
  EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end());
  for (const auto& g : plan.groups()) EXPECT_FALSE(fs::exists(g)) << "cgroup left: " << g;
  EXPECT_NO_THROW(runtime_->export_disk(id, scratch_ + "/stopped.img"));

  // Start over the kept disk: the file is there.
  SandboxSpec again = spec(id, 40, false);
  again.disk_source = std::string(kKeepDisk);
  runtime_->start(again);
  ASSERT_NE(get(id, "/health").find("204"), std::string::npos);
  EXPECT_EQ(read_text("/proc/" + std::to_string(init_pid(id)) + "/root/root/marker"), "kept");

  // A new sandbox from the exported disk (same slot range owner: the file reads as root's).
  SandboxSpec copy = spec("ck-copy", 40 + 1, false);
  copy.disk_source = exported;
  runtime_->start(copy);
  ASSERT_NE(get("ck-copy", "/health").find("204"), std::string::npos);
  EXPECT_EQ(read_text("/proc/" + std::to_string(init_pid("ck-copy")) + "/root/root/marker"), "kept");

  // Kept disk of an id that has none / a missing source disk: clear errors, nothing left.
  SandboxSpec none = spec("ck-none", 42, false);
  none.disk_source = std::string(kKeepDisk);
  EXPECT_THROW(runtime_->start(none), RuntimeError);
  none.disk_source = scratch_ + "/missing.img";
  EXPECT_THROW(runtime_->start(none), RuntimeError);
  expect_no_trace("ck-none");

  runtime_->destroy(id);
  runtime_->destroy("ck-copy");
  expect_no_trace(id);
  expect_no_trace("ck-copy");
}

TEST_F(Checkpoints, ColdPauseRestoresProcessesAndSurvivesARestart) {
  ASSERT_TRUE(criu_present()) << "no CRIU binary: make deps builds it (tools/criu.sh)";
  const std::string id = "ck-cold";
  runtime_->start(spec(id, 43, true));
  std::string before = get(id, "/state");
  ASSERT_EQ(field(before, "pid"), 1) << before;
  long child = field(before, "child");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  std::string images = scratch_ + "/cold";
  runtime_->freeze(id);
  long counter_frozen = std::stol(read_text("/proc/" + std::to_string(init_pid(id)) + "/root/tmp/counter"));
  auto t0 = Clock::now();
  runtime_->checkpoint(id, CheckpointRequest{images, false});
  double dump_ms = ms_since(t0);
  EXPECT_FALSE(runtime_->stats(id));
  EXPECT_EQ(connect_error(id), boost::system::errc::no_such_process);
  EXPECT_TRUE(fs::exists(state_ + "/sandboxes/" + id + "/disk.img"));
  CgroupPlan plan = plan_cgroups(detect_cgroup_layout(), id);
  for (const auto& g : plan.groups()) EXPECT_FALSE(fs::exists(g)) << "cgroup left: " << g;

  // A shim restart in between: the images and the disk are all it needs.
  runtime_ = std::make_unique<ContainerRuntime>(io_.get_executor(), options_, network_);
  EXPECT_FALSE(runtime_->recover(id));
  SandboxSpec resume = spec(id, 43, true);
  resume.disk_source = std::string(kKeepDisk);
  resume.checkpoint_dir = images;
  auto t1 = Clock::now();
  runtime_->start(resume);
  double restore_ms = ms_since(t1);
  printf("cold pause of an idle sandbox: dump %.1f ms, restore %.1f ms, images %.1f MiB\n", dump_ms, restore_ms,
         allocated_bytes(images) / 1048576.0);

  std::string after = get(id, "/state");
  EXPECT_EQ(field(after, "pid"), 1) << after;
  EXPECT_EQ(field(after, "hits"), field(before, "hits") + 1) << after;  // its memory came back
  EXPECT_EQ(field(after, "child"), child);
  EXPECT_GE(field(after, "counter"), counter_frozen);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_GT(field(get(id, "/state"), "counter"), field(after, "counter"));  // the child counts on

  // It is one of ours again: in its cgroups, watched, its network back, recoverable.
  pid_t pid = init_pid(id);
  auto procs = cgroup_pids(plan);
  EXPECT_NE(std::find(procs.begin(), procs.end(), pid), procs.end());
  EXPECT_NE(addresses_of(pid).find(network_.address_for_slot(43)), std::string::npos);
  EXPECT_TRUE(runtime_->stats(id));
  auto second = std::make_unique<ContainerRuntime>(io_.get_executor(), options_, network_);
  EXPECT_TRUE(second->recover(id));
  second.reset();

  std::promise<std::string> exited;
  runtime_->on_exit([&](const std::string& which) { exited.set_value(which); });
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  auto f = exited.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "restored init not reaped/watched";
  EXPECT_EQ(f.get(), id);
  runtime_->destroy(id);
  expect_no_trace(id);
}

TEST_F(Checkpoints, SnapshotForksIntoIndependentSandboxes) {
  ASSERT_TRUE(criu_present()) << "no CRIU binary: make deps builds it (tools/criu.sh)";
  const std::string id = "ck-src";
  runtime_->start(spec(id, 44, true));
  std::string before = get(id, "/state");
  ASSERT_EQ(field(before, "pid"), 1) << before;

  // Snapshot: freeze, export the disk, dump leaving it running, thaw.
  std::string images = scratch_ + "/snap";
  fs::create_directories(images);
  std::string disk = images + "/disk.img";
  runtime_->freeze(id);
  runtime_->export_disk(id, disk);
  auto t0 = Clock::now();
  runtime_->checkpoint(id, CheckpointRequest{images, true});
  double dump_ms = ms_since(t0);
  CgroupPlan plan = plan_cgroups(detect_cgroup_layout(), id);
  EXPECT_TRUE(cgroups_frozen(plan));  // left as found
  runtime_->thaw(id);
  std::string source_after = get(id, "/state");
  EXPECT_EQ(field(source_after, "hits"), field(before, "hits") + 1);
  EXPECT_NE(addresses_of(init_pid(id)).find(network_.address_for_slot(44)), std::string::npos);

  // Two children restored at once, each with its own disk copy and address.
  auto restore_child = [&](const std::string& child, int64_t slot) {
    SandboxSpec s = spec(child, slot, true);
    s.disk_source = disk;
    s.checkpoint_dir = images;
    auto t = Clock::now();
    runtime_->start(s);
    return ms_since(t);
  };
  auto a = std::async(std::launch::async, restore_child, "ck-fork-a", 45);
  auto b = std::async(std::launch::async, restore_child, "ck-fork-b", 46);
  double a_ms = a.get(), b_ms = b.get();
  printf("snapshot dump (leave running) %.1f ms; two concurrent restores %.1f / %.1f ms\n", dump_ms, a_ms, b_ms);
  for (auto [child, slot] : {std::pair<std::string, int64_t>{"ck-fork-a", 45}, {"ck-fork-b", 46}}) {
    std::string state = get(child, "/state");
    EXPECT_EQ(field(state, "pid"), 1) << child << ": " << state;
    EXPECT_EQ(field(state, "hits"), field(before, "hits") + 1) << child;  // the snapshot's memory
    pid_t pid = init_pid(child);
    EXPECT_NE(pid, init_pid(id));
    std::string addrs = addresses_of(pid);
    EXPECT_NE(addrs.find(network_.address_for_slot(slot)), std::string::npos) << child;
    EXPECT_EQ(addrs.find(network_.address_for_slot(44) + "\n"), std::string::npos) << child;
  }
  // Independent: a file written in one child is not in the other, nor in the source.
  std::ofstream("/proc/" + std::to_string(init_pid("ck-fork-a")) + "/root/root/only-a") << "a";
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(init_pid("ck-fork-b")) + "/root/root/only-a"));
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(init_pid(id)) + "/root/root/only-a"));
  EXPECT_EQ(field(get("ck-fork-a", "/state"), "hits"), field(before, "hits") + 2);
  EXPECT_EQ(field(get("ck-fork-b", "/state"), "hits"), field(before, "hits") + 2);

  // Broken images: CRIU fails, the child is cleaned up like a failed start, the message is clean.
  std::string broken = scratch_ + "/broken";
  fs::copy(images, broken);
  fs::remove(broken + "/pstree.img");
  SandboxSpec bad = spec("ck-broken", 49, true);
  bad.disk_source = disk;
  bad.checkpoint_dir = broken;
  try {
    runtime_->start(bad);
    ADD_FAILURE() << "restored from broken images";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()).find(scratch_), std::string::npos) << e.what();
  }
  expect_no_trace("ck-broken");

  for (const char* s : {"ck-src", "ck-fork-a", "ck-fork-b"}) {
    runtime_->destroy(s);
    expect_no_trace(s);
  }
}

TEST_F(Checkpoints, FailedDumpAndRestoreLeaveNoHalfState) {
  ASSERT_TRUE(criu_present()) << "no CRIU binary: make deps builds it (tools/criu.sh)";
  const std::string id = "ck-fail";
  runtime_->start(spec(id, 47, true));
  std::string before = get(id, "/state");
  ASSERT_EQ(field(before, "pid"), 1) << before;
  pid_t pid = init_pid(id);

  // A connection from the host into the sandbox's agent socket, still open: CRIU cannot dump
  // the sandbox's end of it (the agent closes its host connections on /freeze for this reason).
  int held = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(held, 0);
  std::string dir = "/proc/" + std::to_string(pid) + "/root/run/cove";
  int dir_fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir_fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/agent.sock", dir_fd);
  ASSERT_EQ(::connect(held, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << strerror(errno);
  close(dir_fd);
  ASSERT_EQ(write(held, "CONNECT 1\n", 10), 10);
  char ok[5];
  ASSERT_EQ(read(held, ok, sizeof ok), 5);  // the stand-in is now inside this connection

  for (bool leave_running : {false, true}) {
    std::string images = scratch_ + "/fail-" + std::to_string(leave_running);
    try {
      runtime_->checkpoint(id, CheckpointRequest{images, leave_running});
      ADD_FAILURE() << "a sandbox with a host connection was dumped";
    } catch (const RuntimeError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("Unix socket"), std::string::npos) << what;
      EXPECT_EQ(what.find(scratch_), std::string::npos) << what;
    }
    EXPECT_FALSE(fs::exists(images + "/cove-checkpoint.json"));
    // Still running, thawed as it was, same init, network back, watched.
    EXPECT_EQ(init_pid(id), pid);
    EXPECT_FALSE(cgroups_frozen(plan_cgroups(detect_cgroup_layout(), id)));
    EXPECT_NE(addresses_of(pid).find(network_.address_for_slot(47)), std::string::npos);
    EXPECT_TRUE(runtime_->stats(id));
  }
  // A frozen sandbox stays frozen after a failed dump.
  runtime_->freeze(id);
  EXPECT_THROW(runtime_->checkpoint(id, CheckpointRequest{scratch_ + "/fail-frozen", true}), RuntimeError);
  EXPECT_TRUE(cgroups_frozen(plan_cgroups(detect_cgroup_layout(), id)));
  runtime_->thaw(id);
  const char request[] = "GET /state HTTP/1.1\r\n\r\n";
  ASSERT_EQ(write(held, request, sizeof request - 1), static_cast<ssize_t>(sizeof request - 1));
  char reply[256];
  EXPECT_GT(read(held, reply, sizeof reply), 0);
  close(held);
  EXPECT_EQ(field(get(id, "/state"), "hits"), field(before, "hits") + 2);  // the same process, on

  // A restore from images that are not a checkpoint / are broken: clear error, no trace.
  SandboxSpec bad = spec("ck-bad", 48, true);
  bad.checkpoint_dir = scratch_ + "/fail-0";
  EXPECT_THROW(runtime_->start(bad), RuntimeError);
  expect_no_trace("ck-bad");
  runtime_->destroy(id);
  expect_no_trace(id);
}

}  // namespace
}  // namespace cove::shim::container
