#include "runtime/container/container_runtime.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <cstdio>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sched.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <thread>

#include "runtime/container/changes_layer.hpp"
#include "runtime/container/checkpoint_images.hpp"
#include "runtime/container/criu.hpp"
#include "runtime/container/host_channel.hpp"
#include "runtime/container/host_files.hpp"
#include "runtime/container/idmap.hpp"
#include "runtime/container/launch_spec.hpp"

namespace cove::shim::container {

struct ContainerRuntime::Watch {
  explicit Watch(net::any_io_executor ex) : descriptor(std::move(ex)) {}
  net::posix::stream_descriptor descriptor;  // a dup of the init's pidfd; used on the executor only
  std::atomic<bool> cancelled{false};        // destroyed on purpose: no callback
  std::atomic<bool> exited{false};
};

struct ContainerRuntime::ExitCallback {
  std::mutex mutex;
  std::function<void(const std::string&)> callback;
  bool alive = true;
};

namespace {

// Raw calls: glibc 2.36's <sys/pidfd.h> lacks the C linkage wrapper.
int pidfd_open(pid_t pid, unsigned flags) { return static_cast<int>(syscall(SYS_pidfd_open, pid, flags)); }
int pidfd_send_signal(int pidfd, int sig, siginfo_t* info, unsigned flags) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags));
}

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

std::string directory_of_self() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

void make_dir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) throw_errno("create state directory");
}

bool is_directory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Reads until EOF or the deadline; false on timeout.
bool read_until_eof(int fd, std::string& out, std::chrono::steady_clock::time_point deadline) {
  char buf[1024];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buf, static_cast<size_t>(n));
  }
}

// The init is the shim's child (CLONE_PARENT) unless it was recovered after a restart.
siginfo_t reap(int pidfd) {
  siginfo_t info{};
  while (waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED | WNOHANG) < 0 && errno == EINTR) {
  }
  return info;
}

// Why an init died by itself, for the operator: its exit and the end of the agent's log (the
// sandbox directory, and the log with it, is removed by the teardown that follows).
void log_unexpected_exit(const std::string& id, const siginfo_t& info, const std::string& log_path) {
  std::string how = "exit status unknown (not our child)";
  if (info.si_pid != 0) {
    how = info.si_code == CLD_EXITED ? "exit status " + std::to_string(info.si_status)
                                     : "signal " + std::to_string(info.si_status);
  }
  std::string tail;
  int fd = open(log_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > 1024 ? size - 1024 : 0;
    char buf[1024];
    ssize_t n = pread(fd, buf, sizeof buf, from);
    if (n > 0) tail.assign(buf, static_cast<size_t>(n));
    close(fd);
  }
  for (char& c : tail) {
    if (c == '\n') c = '|';
  }
  std::fprintf(stderr, "cove: sandbox %s: init exited by itself (%s); agent log: %s\n", id.c_str(), how.c_str(),
               tail.empty() ? "(empty)" : tail.c_str());
}

// waitpid with a deadline (polling: the child is ours, its exit is near).
bool wait_child(pid_t pid, int& status, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(100);
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
  }
}

// posix_spawn with default signal dispositions, an empty mask and a clean environment (nothing
// of the shim's reaches the child). `fa` places its descriptors. Throws std::system_error.
pid_t spawn_clean(const std::string& path, const std::vector<std::string>& args, posix_spawn_file_actions_t* fa) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  char env0[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char* envp[] = {env0, nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, path.c_str(), fa, &attr, argv.data(), envp);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "spawn " + copy[0]);
  return pid;
}

// Runs argv (stdio on /dev/null, clean environment); its exit status, or -1 on timeout (killed).
int run_process(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  try {
    pid = spawn_clean(args.at(0), args, &fa);
  } catch (...) {
    posix_spawn_file_actions_destroy(&fa);
    throw;
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  if (!wait_child(pid, status, timeout)) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Network namespaces are per thread: a short-lived thread enters the sandbox's and configures
// eth0 there, leaving the shim's other threads where they are.
void configure_in_netns(pid_t pid, const std::string& address, int prefix_length, const std::string& gateway) {
  int ns = open(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) throw_errno("open network namespace");
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      if (setns(ns, CLONE_NEWNET) != 0) throw_errno("enter network namespace");
      configure_sandbox_interfaces(address, prefix_length, gateway);
    } catch (...) {
      error = std::current_exception();
    }
  });
  worker.join();
  close(ns);
  if (error) std::rethrow_exception(error);
}

bool wait_readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  int r;
  do r = poll(&p, 1, static_cast<int>(timeout.count()));
  while (r < 0 && errno == EINTR);
  return r > 0;
}

}  // namespace

ContainerRuntime::ContainerRuntime(net::any_io_executor executor, ContainerRuntimeOptions options,
                                   HostNetwork& network)
    : executor_(std::move(executor)),
      options_(std::move(options)),
      network_(network),
      images_(options_.state_dir + "/images"),
      exit_callback_(std::make_shared<ExitCallback>()) {
  if (options_.state_dir.empty() || options_.state_dir[0] != '/') {
    throw RuntimeError("container runtime: state_dir must be an absolute path");
  }
  if (options_.init_path.empty()) options_.init_path = directory_of_self() + "/cove-sandbox-init";
  try {
    make_dir(options_.state_dir, 0700);
    make_dir(options_.state_dir + "/sandboxes", 0700);
    make_dir(options_.state_dir + "/images", 0700);
    cgroup_layout_ = detect_cgroup_layout();
    plan_cgroups(cgroup_layout_, "probe");  // throws if nothing usable
  } catch (const std::exception& e) {
    throw RuntimeError(std::string("container runtime: ") + e.what());
  }
  if (access(options_.init_path.c_str(), X_OK) != 0) {
    throw RuntimeError("container runtime: cove-sandbox-init not found or not executable");
  }
}

ContainerRuntime::~ContainerRuntime() {
  {
    std::lock_guard lock(exit_callback_->mutex);
    exit_callback_->alive = false;
  }
  // Sandboxes outlive the shim (recover() finds them again); only our handles go.
  std::lock_guard lock(mutex_);
  for (auto& [id, inst] : instances_) {
    if (inst->watch) inst->watch->cancelled = true;
    if (inst->pidfd >= 0) close(inst->pidfd);
  }
}

bool ContainerRuntime::valid_id(const std::string& id) {
  if (id.empty() || id.size() > 63) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    char c = id[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '-' && c != '_'))) return false;
  }
  return true;
}

std::string ContainerRuntime::sandbox_dir(const std::string& id) const {
  return options_.state_dir + "/sandboxes/" + id;
}

void ContainerRuntime::start(const SandboxSpec& spec) {
  if (!valid_id(spec.id)) throw RuntimeError("invalid sandbox id");
  if (spec.layers.empty()) throw RuntimeError("sandbox has no root filesystem layers");
  for (const auto& layer : spec.layers) {
    if (layer.empty() || layer[0] != '/' || !is_directory(layer)) throw RuntimeError("a root filesystem layer is missing");
  }
  if (spec.cpu_count < 1 || spec.cpu_count > 1024) throw RuntimeError("cpu_count out of range");
  if (spec.memory_mb < 16) throw RuntimeError("memory_mb out of range");
  if (spec.disk_size_mb < 16) throw RuntimeError("disk_size_mb out of range");
  if (spec.pids_max < 8) throw RuntimeError("pids_max out of range");
  if (spec.agent_port == 0) throw RuntimeError("agent_port out of range");
  try {
    host_base_for_slot(spec.slot);
  } catch (const std::out_of_range&) {
    throw RuntimeError("slot out of range");
  }
  if (!spec.changes_dir.empty() && (spec.changes_dir[0] != '/' || !is_directory(spec.changes_dir))) {
    throw RuntimeError("the changes directory is missing");
  }
  const bool keep_disk = spec.disk_source == kKeepDisk;
  const bool copy_disk = !spec.disk_source.empty() && !keep_disk;
  if (!spec.changes_dir.empty() && !spec.disk_source.empty()) throw RuntimeError("a build sandbox has no disk to reuse");
  if (copy_disk) {
    struct stat st;
    if (spec.disk_source[0] != '/' || stat(spec.disk_source.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      throw RuntimeError("the disk to start from is missing");
    }
  }
  std::optional<CheckpointInfo> checkpoint;
  if (!spec.checkpoint_dir.empty()) {
    if (!criu_available()) throw RuntimeError("checkpointing is not available on this host");
    if (spec.checkpoint_dir[0] != '/') throw RuntimeError("the checkpoint is missing or incomplete");
    checkpoint = load_checkpoint_info(spec.checkpoint_dir);
    if (!checkpoint) throw RuntimeError("the checkpoint is missing or incomplete");
    if (!spec.changes_dir.empty()) throw RuntimeError("a build sandbox cannot start from a checkpoint");
  }
  {
    std::lock_guard lock(mutex_);
    if (instances_.count(spec.id)) throw RuntimeError("sandbox already exists");
  }
  std::string dir = sandbox_dir(spec.id);
  std::optional<InstanceRecord> old;
  if (keep_disk) {
    // The dir of a stopped or checkpointed sandbox: its disk stays, the rest is made anew.
    old = load_instance(dir + "/instance.json");
    struct stat st;
    if (!old || old->id != spec.id || stat((dir + "/disk.img").c_str(), &st) != 0) {
      throw RuntimeError("this sandbox has no kept disk on this host");
    }
    if (old->pid > 0 && process_start_time(old->pid) == old->start_time) throw RuntimeError("sandbox already exists");
  } else if (mkdir(dir.c_str(), 0700) != 0) {
    if (errno == EEXIST) throw RuntimeError("sandbox already exists");
    throw RuntimeError(std::string("cannot create sandbox directory: ") + strerror(errno));
  }

  InstanceRecord record;
  record.id = spec.id;
  record.slot = spec.slot;
  record.internet = spec.allow_internet_access;
  record.cpu_count = spec.cpu_count;
  record.layers = spec.layers;
  record.changes_dir = spec.changes_dir;
  // A restore keeps the id mapping its images were made with (the user namespace is in them,
  // and the disk's files are owned accordingly).
  // A kept disk keeps the mapping its files were written with.
  record.id_base = checkpoint ? checkpoint->id_base : old ? old->id_base : host_base_for_slot(spec.slot);
  record.id_count = checkpoint ? checkpoint->id_count : old ? old->id_count : kIdRangeSize;
  try {
    record.cgroups = plan_cgroups(cgroup_layout_, spec.id);
    save_instance(dir + "/instance.json", record);
    if (copy_disk) {
      std::string tmp = dir + "/disk.img.tmp";
      unlink(tmp.c_str());
      copy_sparse(spec.disk_source, tmp);
      if (rename(tmp.c_str(), (dir + "/disk.img").c_str()) != 0) throw_errno("rename disk");
    } else if (!keep_disk && spec.changes_dir.empty()) {
      copy_sparse(images_.empty_image(spec.disk_size_mb), dir + "/disk.img");
    }
    launch(spec, record, checkpoint ? &*checkpoint : nullptr);
    int pidfd = pidfd_open(record.pid, 0);
    if (pidfd < 0) throw_errno("pidfd_open");
    auto start_time = process_start_time(record.pid);
    record.start_time = start_time.value_or(0);
    try {
      save_instance(dir + "/instance.json", record);
      if (checkpoint && record.internet) attach_network(record);
    } catch (...) {
      pidfd_send_signal(pidfd, SIGKILL, nullptr, 0);
      close(pidfd);
      throw;
    }
    adopt(record, pidfd);
  } catch (const std::exception& e) {
    try {
      if (keep_disk) {
        // The kept disk outlives a failed start: the sandbox stays stopped.
        teardown(spec.id, record, -1);
        record.pid = 0;
        record.start_time = 0;
        record.loop = -1;
        save_instance(dir + "/instance.json", record);
      } else {
        cleanup(spec.id, record, -1);
      }
    } catch (...) {
    }
    throw RuntimeError(std::string(checkpoint ? "sandbox restore failed: " : "sandbox start failed: ") + e.what());
  }
}

void ContainerRuntime::launch(const SandboxSpec& spec, InstanceRecord& record, const CheckpointInfo* checkpoint) {
  LaunchSpec ls;
  ls.id = spec.id;
  ls.sandbox_dir = sandbox_dir(spec.id);
  ls.layers = spec.layers;
  ls.id_base = record.id_base;
  ls.id_count = record.id_count;
  if (checkpoint) {
    ls.checkpoint_dir = spec.checkpoint_dir;
    ls.criu_path = options_.criu_path;
    ls.stdout_key = checkpoint->stdout_key;
  }
  ls.cgroups = record.cgroups;
  ls.limits.memory_bytes = static_cast<uint64_t>(spec.memory_mb) << 20;
  ls.limits.cpu_period_us = 100000;
  ls.limits.cpu_quota_us = static_cast<int64_t>(spec.cpu_count) * 100000;
  ls.limits.pids_max = spec.pids_max;
  ls.internet = spec.allow_internet_access;
  ls.slot = spec.slot;
  ls.bridge = options_.network.bridge;
  ls.subnet = options_.network.subnet;
  if (spec.allow_internet_access) {
    ls.address = network_.address_for_slot(spec.slot);
    ls.gateway = network_.gateway();
    ls.prefix_length = network_.prefix_length();
  }
  ls.agent_port = spec.agent_port;
  ls.changes_dir = spec.changes_dir;
  std::string json = to_json(ls);

  int spec_pipe[2], report_pipe[2];
  if (pipe2(spec_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
  Fd spec_r(spec_pipe[0]), spec_w(spec_pipe[1]);
  if (pipe2(report_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
  Fd report_r(report_pipe[0]), report_w(report_pipe[1]);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, spec_r.fd, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, report_w.fd, 3);
  pid_t launcher = 0;
  try {
    launcher = spawn_clean(options_.init_path, {"cove-sandbox-init"}, &fa);
  } catch (...) {
    posix_spawn_file_actions_destroy(&fa);
    throw;
  }
  posix_spawn_file_actions_destroy(&fa);
  spec_r.reset();
  report_w.reset();

  // The spec is small; the launcher reads it whole before doing anything else.
  std::string_view rest = json;
  while (!rest.empty()) {
    ssize_t n = write(spec_w.fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the launcher died: its report (none) tells
    rest.remove_prefix(static_cast<size_t>(n));
  }
  spec_w.reset();

  std::string reply;
  auto timeout = checkpoint ? options_.start_timeout + options_.checkpoint_timeout : options_.start_timeout;
  bool complete = read_until_eof(report_r.fd, reply, std::chrono::steady_clock::now() + timeout);
  if (!complete) kill(launcher, SIGKILL);
  int status = 0;
  if (complete && checkpoint) {
    // The launcher became CRIU: wait for it within the restore's own time limit.
    if (!wait_child(launcher, status, options_.checkpoint_timeout)) {
      kill(launcher, SIGKILL);
      while (waitpid(launcher, &status, 0) < 0 && errno == EINTR) {
      }
      throw std::runtime_error("the restore timed out");
    }
  } else {
    while (waitpid(launcher, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!complete) throw std::runtime_error("cove-sandbox-init timed out");
  auto report = parse_launch_report(reply);
  if (!report) throw std::runtime_error("cove-sandbox-init failed without a report");
  if (!report->ok) throw std::runtime_error(report->error);
  record.loop = report->loop;
  if (!report->restoring) {
    record.pid = report->pid;
    return;
  }
  // Saved now, so a failure below still finds (and detaches) the loop device.
  save_instance(ls.sandbox_dir + "/instance.json", record);
  std::string log;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) throw std::runtime_error("CRIU could not be run");
    try_read_text(ls.sandbox_dir + "/restore.log", log);
    throw std::runtime_error(criu_failure_reason(log));
  }
  std::string pid_text;
  pid_t pid = 0;
  if (try_read_text(ls.sandbox_dir + "/restored.pid", pid_text)) pid = static_cast<pid_t>(std::atoi(pid_text.c_str()));
  if (pid <= 0) throw std::runtime_error("CRIU did not report the restored process");
  record.pid = pid;
}

void ContainerRuntime::adopt(InstanceRecord record, int pidfd) {
  auto inst = std::make_unique<Instance>();
  inst->pidfd = pidfd;
  inst->watch = std::make_shared<Watch>(executor_);
  auto watch = inst->watch;
  std::string id = record.id;
  inst->record = std::move(record);
  int watch_fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 0);
  {
    std::lock_guard lock(mutex_);
    instances_[id] = std::move(inst);
  }
  if (watch_fd < 0) return;  // no exit notification for this one; everything else works
  // The descriptor is set up and waited on from the executor, as asio objects want.
  std::string log_path = sandbox_dir(id) + "/agent.log";
  net::post(executor_, [watch, watch_fd, id, log_path, callbacks = exit_callback_] {
    if (watch->cancelled) {
      close(watch_fd);
      return;
    }
    watch->descriptor.assign(watch_fd);
    watch->descriptor.async_wait(net::posix::stream_descriptor::wait_read,
                                 [watch, id, log_path, callbacks](const boost::system::error_code& ec) {
                                   if (ec || watch->cancelled) return;
                                   watch->exited = true;
                                   siginfo_t info = reap(watch->descriptor.native_handle());
                                   log_unexpected_exit(id, info, log_path);
                                   std::function<void(const std::string&)> cb;
                                   {
                                     std::lock_guard lock(callbacks->mutex);
                                     if (callbacks->alive) cb = callbacks->callback;
                                   }
                                   if (cb) cb(id);
                                 });
  });
}

void ContainerRuntime::on_exit(std::function<void(const std::string& id)> callback) {
  std::lock_guard lock(exit_callback_->mutex);
  exit_callback_->callback = std::move(callback);
}

namespace {
[[noreturn]] void no_such_sandbox() {
  throw boost::system::system_error(boost::system::errc::make_error_code(boost::system::errc::no_such_process));
}
}  // namespace

// Alive means: known, and its pidfd can still be signalled. While it is alive its pid cannot
// name another process, so the procfs path below reaches this sandbox's root.
int ContainerRuntime::live_pidfd(const std::string& id, pid_t& pid) {
  std::lock_guard lock(mutex_);
  auto it = instances_.find(id);
  if (it == instances_.end() || it->second->watch->exited) return -1;
  if (pidfd_send_signal(it->second->pidfd, 0, nullptr, 0) != 0) return -1;
  pid = it->second->record.pid;
  return fcntl(it->second->pidfd, F_DUPFD_CLOEXEC, 0);
}

net::awaitable<Socket> ContainerRuntime::connect(const std::string& id, uint16_t port) {
  pid_t pid = 0;
  Fd pidfd(live_pidfd(id, pid));
  if (pidfd.fd < 0) no_such_sandbox();
  std::string path = "/proc/" + std::to_string(pid) + "/root/run/cove/agent.sock";
  std::optional<Socket> socket;
  try {
    socket.emplace(co_await connect_host_channel(path, port));
  } catch (const boost::system::system_error&) {
    if (pidfd_send_signal(pidfd.fd, 0, nullptr, 0) != 0) no_such_sandbox();  // died meanwhile
    throw;
  }
  // Still alive after the connect: the path did lead to this sandbox.
  if (pidfd_send_signal(pidfd.fd, 0, nullptr, 0) != 0) no_such_sandbox();
  co_return std::move(*socket);
}

void ContainerRuntime::destroy(const std::string& id) {
  if (!valid_id(id)) return;  // nothing of ours can carry such a name
  std::optional<InstanceRecord> record;
  int pidfd = -1;
  std::shared_ptr<Watch> watch;
  {
    std::lock_guard lock(mutex_);
    auto it = instances_.find(id);
    if (it != instances_.end()) {
      record = it->second->record;
      pidfd = it->second->pidfd;
      watch = it->second->watch;
      instances_.erase(it);
    }
  }
  if (watch) {
    watch->cancelled = true;
    net::post(executor_, [watch] {
      boost::system::error_code ignored;
      watch->descriptor.close(ignored);
    });
  }
  if (!record) record = load_instance(sandbox_dir(id) + "/instance.json");
  try {
    cleanup(id, record, pidfd);
  } catch (...) {
    if (pidfd >= 0) close(pidfd);
    throw;
  }
  if (pidfd >= 0) close(pidfd);
}

void ContainerRuntime::teardown(const std::string& id, const std::optional<InstanceRecord>& record, int pidfd) {
  std::string dir = sandbox_dir(id);
  CgroupPlan plan;
  if (record && !record->cgroups.groups().empty()) {
    plan = record->cgroups;
  } else {
    plan = plan_cgroups(cgroup_layout_, id);
  }

  // Everything in the sandbox, the launcher of a half-made one included, is in its cgroups.
  kill_cgroup_processes(plan);
  if (pidfd >= 0) {
    pidfd_send_signal(pidfd, SIGKILL, nullptr, 0);
  } else if (record && record->pid > 0 && process_start_time(record->pid) == record->start_time) {
    kill(record->pid, SIGKILL);
  }
  if (!wait_cgroups_empty(plan, options_.kill_timeout)) {
    throw RuntimeError("sandbox processes did not exit");
  }
  if (pidfd >= 0 && wait_readable(pidfd, options_.kill_timeout)) reap(pidfd);
  if (record && record->internet) {
    try {
      network_.detach(record->slot);
    } catch (const std::exception&) {
      // A missing interface is what we want anyway; anything else must not keep the rest here.
    }
  }
  if (!remove_cgroups(plan)) throw RuntimeError("sandbox cgroups could not be removed");

  // The disk's loop device detaches itself once the sandbox's mount namespace is gone, which the
  // kernel finishes shortly after the last process exits.
  if (record && record->loop >= 0) {
    std::string backing_path = "/sys/block/loop" + std::to_string(record->loop) + "/loop/backing_file";
    std::string disk = dir + "/disk.img";
    auto deadline = std::chrono::steady_clock::now() + options_.kill_timeout;
    for (auto pause = std::chrono::microseconds(100);; pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10))) {
      std::string backing;
      if (!try_read_text(backing_path, backing) || backing.rfind(disk, 0) != 0) break;
      if (std::chrono::steady_clock::now() >= deadline) throw RuntimeError("sandbox disk is still attached");
      std::this_thread::sleep_for(pause);
    }
  }
}

void ContainerRuntime::cleanup(const std::string& id, const std::optional<InstanceRecord>& record, int pidfd) {
  std::string dir = sandbox_dir(id);
  teardown(id, record, pidfd);
  if (record && !record->changes_dir.empty() && record->id_count > 0) {
    // Nothing runs in the sandbox any more: its writable layer can be handed over.
    hand_over_changes(record->changes_dir, record->id_base, record->id_count);
  }
  try {
    remove_tree(dir);
  } catch (const std::exception& e) {
    throw RuntimeError(std::string("cannot remove sandbox directory: ") + e.what());
  }
}

bool ContainerRuntime::recover(const std::string& id) {
  if (!valid_id(id)) return false;
  {
    std::lock_guard lock(mutex_);
    auto it = instances_.find(id);
    if (it != instances_.end()) return !it->second->watch->exited;
  }
  auto record = load_instance(sandbox_dir(id) + "/instance.json");
  if (!record || record->pid <= 0 || record->id != id) return false;
  if (process_start_time(record->pid) != record->start_time) return false;
  int pidfd = pidfd_open(record->pid, 0);
  if (pidfd < 0) return false;
  // Checked again with the pidfd held: the pid cannot change owner after this.
  if (process_start_time(record->pid) != record->start_time) {
    close(pidfd);
    return false;
  }
  adopt(*record, pidfd);
  return true;
}

std::vector<std::string> ContainerRuntime::instances() {
  std::vector<std::string> out;
  DIR* dir = opendir((options_.state_dir + "/sandboxes").c_str());
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (valid_id(name) && is_directory(sandbox_dir(name))) out.push_back(name);
  }
  closedir(dir);
  return out;
}

std::optional<SandboxStats> ContainerRuntime::stats(const std::string& id) {
  InstanceRecord record;
  {
    std::lock_guard lock(mutex_);
    auto it = instances_.find(id);
    if (it == instances_.end() || it->second->watch->exited) return std::nullopt;
    if (pidfd_send_signal(it->second->pidfd, 0, nullptr, 0) != 0) return std::nullopt;
    record = it->second->record;
  }
  SandboxStats s;
  s.cpu_count = record.cpu_count;
  CgroupUsage usage = read_cgroup_usage(record.cgroups);
  s.cpu_usage_ns = usage.cpu_ns;
  s.memory_used = usage.memory_used;
  s.memory_total = usage.memory_limit;
  // The overlay's statfs is its upper filesystem's: the sandbox's disk.
  struct statfs fs {};
  if (statfs(("/proc/" + std::to_string(record.pid) + "/root").c_str(), &fs) == 0) {
    s.disk_total = static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize;
    s.disk_used = static_cast<uint64_t>(fs.f_blocks - fs.f_bfree) * fs.f_frsize;
  }
  return s;
}

bool ContainerRuntime::criu_available() const {
  return !options_.criu_path.empty() && access(options_.criu_path.c_str(), X_OK) == 0;
}

InstanceRecord ContainerRuntime::running_record(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = instances_.find(id);
  if (it == instances_.end() || it->second->watch->exited ||
      pidfd_send_signal(it->second->pidfd, 0, nullptr, 0) != 0) {
    throw RuntimeError("sandbox is not running");
  }
  return it->second->record;
}

std::unique_ptr<ContainerRuntime::Instance> ContainerRuntime::take(const std::string& id) {
  std::unique_ptr<Instance> inst;
  {
    std::lock_guard lock(mutex_);
    auto it = instances_.find(id);
    if (it == instances_.end()) return nullptr;
    inst = std::move(it->second);
    instances_.erase(it);
  }
  // Its end is ours, not news for on_exit.
  auto watch = inst->watch;
  watch->cancelled = true;
  net::post(executor_, [watch] {
    boost::system::error_code ignored;
    watch->descriptor.close(ignored);
  });
  return inst;
}

void ContainerRuntime::attach_network(const InstanceRecord& record) {
  network_.attach(record.slot, record.pid);
  configure_in_netns(record.pid, network_.address_for_slot(record.slot), network_.prefix_length(),
                     network_.gateway());
}

void ContainerRuntime::freeze(const std::string& id) {
  InstanceRecord record = running_record(id);
  try {
    set_cgroups_frozen(record.cgroups, true, options_.freeze_timeout);
  } catch (const std::exception& e) {
    // Half frozen is no state to leave a sandbox in.
    try {
      set_cgroups_frozen(record.cgroups, false, options_.freeze_timeout);
    } catch (...) {
    }
    throw RuntimeError(std::string("freeze failed: ") + e.what());
  }
}

void ContainerRuntime::thaw(const std::string& id) {
  InstanceRecord record = running_record(id);
  try {
    set_cgroups_frozen(record.cgroups, false, options_.freeze_timeout);
  } catch (const std::exception& e) {
    throw RuntimeError(std::string("thaw failed: ") + e.what());
  }
}

void ContainerRuntime::stop(const std::string& id) {
  if (!valid_id(id)) throw RuntimeError("invalid sandbox id");
  std::string dir = sandbox_dir(id);
  std::optional<InstanceRecord> record;
  int pidfd = -1;
  if (auto inst = take(id)) {
    record = inst->record;
    pidfd = inst->pidfd;
  } else {
    record = load_instance(dir + "/instance.json");
    if (!record) throw RuntimeError("no such sandbox");
    if (record->pid <= 0) return;  // already stopped
  }
  try {
    teardown(id, record, pidfd);
  } catch (...) {
    if (pidfd >= 0) close(pidfd);
    throw;
  }
  if (pidfd >= 0) close(pidfd);
  record->pid = 0;
  record->start_time = 0;
  record->loop = -1;
  try {
    save_instance(dir + "/instance.json", *record);
  } catch (const std::exception& e) {
    throw RuntimeError(std::string("stop: ") + e.what());
  }
}

void ContainerRuntime::export_disk(const std::string& id, const std::string& path) {
  if (!valid_id(id)) throw RuntimeError("invalid sandbox id");
  if (path.empty() || path[0] != '/') throw RuntimeError("export_disk needs an absolute path");
  std::string dir = sandbox_dir(id);
  std::optional<InstanceRecord> record;
  pid_t pid = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = instances_.find(id);
    if (it != instances_.end() && !it->second->watch->exited) {
      record = it->second->record;
      pid = record->pid;
    }
  }
  if (!record) record = load_instance(dir + "/instance.json");
  if (!record) throw RuntimeError("no such sandbox");
  if (!record->changes_dir.empty()) throw RuntimeError("a build sandbox has no disk");
  if (pid > 0) {
    if (!cgroups_frozen(record->cgroups)) throw RuntimeError("the sandbox must be frozen or stopped to export its disk");
    // Everything the frozen processes wrote reaches disk.img (the overlay syncs its upper fs).
    int root = open(("/proc/" + std::to_string(pid) + "/root").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0 || syncfs(root) != 0) {
      if (root >= 0) close(root);
      throw RuntimeError("cannot flush the sandbox's disk");
    }
    close(root);
  }
  std::string tmp = path + ".tmp";
  try {
    unlink(tmp.c_str());
    copy_sparse(dir + "/disk.img", tmp);
    if (rename(tmp.c_str(), path.c_str()) != 0) throw_errno("rename");
  } catch (const std::exception& e) {
    unlink(tmp.c_str());
    throw RuntimeError(std::string("cannot copy the sandbox's disk: ") + e.what());
  }
}

void ContainerRuntime::checkpoint(const std::string& id, const CheckpointRequest& request) {
  if (!criu_available()) throw RuntimeError("checkpointing is not available on this host");
  if (request.dir.empty() || request.dir[0] != '/') throw RuntimeError("checkpoint needs an absolute directory");
  InstanceRecord record = running_record(id);
  if (!record.changes_dir.empty()) throw RuntimeError("a build sandbox cannot be checkpointed");
  if (mkdir(request.dir.c_str(), 0711) != 0 && errno != EEXIST) {
    throw RuntimeError(std::string("cannot create the checkpoint directory: ") + strerror(errno));
  }
  // CRIU opens some images from inside the restored user namespace, whose root is not the host's:
  // the dir must be searchable (its parents in the state dir keep everyone else out).
  if (chmod(request.dir.c_str(), 0711) != 0) throw RuntimeError("cannot prepare the checkpoint directory");
  const std::string pid_dir = "/proc/" + std::to_string(record.pid);

  // The agent's stdout (agent.log, outside the container) is handed back on restore by key.
  CheckpointInfo info;
  info.id_base = record.id_base;
  info.id_count = record.id_count;
  {
    std::string fdinfo;
    struct stat st;
    if (!try_read_text(pid_dir + "/fdinfo/1", fdinfo) || stat((pid_dir + "/fd/1").c_str(), &st) != 0) {
      throw RuntimeError("sandbox is not running");
    }
    int mnt_id = parse_fdinfo_mnt_id(fdinfo);
    if (mnt_id >= 0) info.stdout_key = criu_external_file_key(mnt_id, st.st_ino);
  }

  const bool was_frozen = cgroups_frozen(record.cgroups);
  // CRIU dumps the network namespace with loopback only: eth0 goes (and comes back, for the
  // slot the sandbox has then, after the dump or the restore).
  auto restore_source = [&] {
    if (record.internet) {
      try {
        attach_network(record);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cove: sandbox %s: network not reattached after a checkpoint: %s\n", id.c_str(), e.what());
      }
    }
    if (!was_frozen) {
      try {
        set_cgroups_frozen(record.cgroups, false, options_.freeze_timeout);
      } catch (...) {
      }
    }
  };
  std::unique_ptr<Instance> taken;
  try {
    if (!was_frozen) set_cgroups_frozen(record.cgroups, true, options_.freeze_timeout);
    if (record.internet) network_.detach(record.slot);
  } catch (const std::exception& e) {
    restore_source();
    throw RuntimeError(std::string("checkpoint failed: ") + e.what());
  }
  // A dump that ends the processes must not look like an exit to on_exit.
  if (!request.leave_running) {
    taken = take(id);
    if (!taken) {  // destroyed meanwhile
      restore_source();
      throw RuntimeError("sandbox is not running");
    }
  }

  CriuDump dump;
  dump.criu = options_.criu_path;
  dump.pid = record.pid;
  dump.images_dir = request.dir;
  dump.log_file = request.dir + "/" + std::string(kDumpLogFile);
  dump.freeze_cgroup = freezer_group(record.cgroups);
  dump.stdout_key = info.stdout_key;
  dump.leave_running = request.leave_running;
  int rc = -1;
  std::string failure;
  try {
    rc = run_process(criu_dump_argv(dump), options_.checkpoint_timeout);
    if (rc != 0) {
      std::string log;
      try_read_text(dump.log_file, log);
      failure = rc < 0 ? "the dump timed out" : criu_failure_reason(log);
      // Kept for the operator (the images dir goes with the failed checkpoint).
      try_write_text(sandbox_dir(id) + "/dump-failed.log", log);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (failure.empty() && !request.leave_running && pidfd_send_signal(taken->pidfd, 0, nullptr, 0) == 0) {
    // CRIU ends the dumped tree; it must be gone (a zombie is gone enough: teardown reaps it).
    pidfd_send_signal(taken->pidfd, SIGKILL, nullptr, 0);
  }
  if (failure.empty()) {
    try {
      save_checkpoint_info(request.dir, info);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (!failure.empty()) {
    if (taken && pidfd_send_signal(taken->pidfd, 0, nullptr, 0) == 0) {
      // The processes are still there (CRIU resumes them when a dump fails): watch them again.
      int pidfd = taken->pidfd;
      taken->pidfd = -1;
      adopt(record, pidfd);
      taken.reset();
    }
    if (!taken) {
      restore_source();
      if (failure == kOutsideConnectionReason) throw CheckpointBusyError("checkpoint failed: " + failure);
      throw RuntimeError("checkpoint failed: " + failure);
    }
    // The tree died although the dump failed: the sandbox is stopped.
  }
  if (request.leave_running) {
    restore_source();
    return;
  }
  int pidfd = taken->pidfd;
  taken->pidfd = -1;
  try {
    teardown(id, record, pidfd);
  } catch (...) {
    close(pidfd);
    throw;
  }
  close(pidfd);
  record.pid = 0;
  record.start_time = 0;
  record.loop = -1;
  save_instance(sandbox_dir(id) + "/instance.json", record);
  if (!failure.empty()) throw RuntimeError("checkpoint failed: " + failure);
}
}  // namespace cove::shim::container
