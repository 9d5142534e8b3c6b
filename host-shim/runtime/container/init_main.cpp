// cove-sandbox-init: the launcher the shim spawns for each sandbox (like runc's init). It is
// single-threaded and runs as host root, so it can do the namespace and mount work the
// multi-threaded shim must not do after fork.
//
//   stdin  the LaunchSpec as JSON          fd 3  the report: "OK <pid> <loop>" or "ERROR <msg>"
//
// Steps: join the sandbox's cgroups → private mount namespace → clone the sandbox init into new
// user/pid/net/uts/ipc/cgroup namespaces (as a child of the shim: CLONE_PARENT) → write its id
// maps → attach the disk image, idmapped layers and the overlay root in the launcher's namespace
// (which the init still shares) → network → release the init, which copies that mount namespace,
// builds its view, pivots, drops privileges and execs the agent → report and exit.
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <algorithm>
#include <string>
#include <system_error>

#include "runtime/container/capabilities.hpp"
#include "runtime/container/cgroups.hpp"
#include "runtime/container/criu.hpp"
#include "runtime/container/disk_image.hpp"
#include "runtime/container/host_files.hpp"
#include "runtime/container/idmap.hpp"
#include "runtime/container/launch_spec.hpp"
#include "runtime/container/mounts.hpp"
#include "runtime/container/network.hpp"
#include "runtime/container/seccomp.hpp"

using namespace cove::shim::container;

namespace {

constexpr int kReportFd = 3;

// Names used inside the sandbox dir (the launcher works relative to it).
constexpr const char* kDisk = "disk";
constexpr const char* kRootfs = "rootfs";

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

void make_dir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) throw_errno("create mount point");
}

// The sandbox init, between clone and exec. Errors go to `error_fd` (closed by the exec).
[[noreturn]] void sandbox_init(const LaunchSpec& spec, int release_fd, int error_fd, int log_fd) {
  const char* step = "start";
  try {
    char go = 0;
    step = "wait for the launcher";
    if (read(release_fd, &go, 1) != 1) _exit(1);  // the launcher gave up
    close(release_fd);

    // A copy of the launcher's namespace, now with the overlay root; owned by our user namespace.
    step = "mount namespace";
    if (unshare(CLONE_NEWNS) != 0) throw_errno("unshare mount namespace");
    enter_rootfs(spec.sandbox_dir + "/" + kRootfs);

    step = "become the sandbox's root";
    if (setgroups(0, nullptr) != 0) throw_errno("setgroups");
    if (setresgid(0, 0, 0) != 0) throw_errno("setresgid");
    if (setresuid(0, 0, 0) != 0) throw_errno("setresuid");
    if (sethostname(spec.id.data(), spec.id.size()) != 0) throw_errno("sethostname");

    step = "build the root";
    populate_root();
    pivot_to_cwd();

    step = "network";
    configure_sandbox_interfaces(spec.address, spec.prefix_length, spec.gateway);

    step = "stdio";
    if (setsid() < 0) throw_errno("setsid");
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) throw_errno("open /dev/null");
    if (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) throw_errno("dup2");
    // Nothing inherited crosses the exec (the error pipe closes with it, telling the launcher).
    if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) throw_errno("close_range");

    // The filter first: loading it without no_new_privs needs CAP_SYS_ADMIN, which the
    // capability step then drops (capset is allowed by the filter).
    step = "seccomp";
    load_sandbox_seccomp_filter();
    step = "capabilities";
    restrict_to_default_capabilities();

    std::string port = std::to_string(spec.agent_port);
    // Each uid's processes stay a reserve below pids.max, so a fork bomb leaves room for the
    // agent and for root's commands (see process/spawn.hpp).
    constexpr int64_t kReserve = 64;
    int64_t per_uid = std::max<int64_t>(spec.limits.pids_max - kReserve, 16);
    std::string process_limit = std::to_string(per_uid);
    const char* argv[] = {"cove-agent", "-port", port.c_str(), "-unix", spec.agent_socket.c_str(),
                          "-process-limit", process_limit.c_str(), nullptr};
    const char* envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
                          nullptr};
    step = "exec the agent";
    execve(spec.agent_path.c_str(), const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    throw_errno("execve");
  } catch (const std::exception& e) {
    write_all(error_fd, std::string(step) + ": " + e.what());
  }
  _exit(127);
}

struct Launched {
  pid_t pid;
  int loop;
};

// The writable disk (or a build's changes dir), the idmapped read-only layers and the overlay at
// `rootfs`, in the launcher's mount namespace; `userns` carries the sandbox's id mapping.
// Returns the disk's loop device number (-1 for a build).
int build_root(const LaunchSpec& spec, int userns) {
  make_dir(kDisk, 0700);
  int loop_number = -1;
  if (spec.changes_dir.empty()) {
    LoopDevice loop = attach_loop("disk.img");
    mount_disk(loop.path(), kDisk);
    close(loop.fd);  // the mount holds the device now; autoclear once it is gone
    loop_number = loop.number;
  } else {
    // A build: the writable layer is a host dir the shim keeps (bound here, in our private
    // mount namespace, so the sandbox's mountinfo shows the same relative paths as ever).
    if (mount(spec.changes_dir.c_str(), kDisk, nullptr, MS_BIND, nullptr) != 0) throw_errno("bind changes dir");
  }
  for (const char* d : {"disk/upper", "disk/work"}) {
    make_dir(d, 0755);
    if (chown(d, spec.id_base, spec.id_base) != 0) throw_errno("chown upper");
  }

  std::vector<std::string> lowers;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    std::string target = "l" + std::to_string(i);
    make_dir(target, 0700);
    idmapped_bind(spec.layers[i], userns, target);
    lowers.push_back(target);
  }
  make_dir(kRootfs, 0755);
  mount_overlay(lowers, "disk/upper", "disk/work", kRootfs);
  return loop_number;
}

// The agent's stdout/stderr. Owned by the sandbox's root (mode 0600): a CRIU restore reopens it
// with the restored process's credentials.
int open_agent_log(const LaunchSpec& spec) {
  int log_fd = open("agent.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) throw_errno("open agent log");
  if (fchown(log_fd, spec.id_base, spec.id_base) != 0 || fchmod(log_fd, 0600) != 0) throw_errno("chown agent log");
  return log_fd;
}

Launched launch(const LaunchSpec& spec) {
  if (chdir(spec.sandbox_dir.c_str()) != 0) throw_errno("enter sandbox dir");

  create_cgroups(spec.cgroups, spec.limits);
  join_cgroups(spec.cgroups, getpid());  // the init inherits them (and sees its group as root)
  make_mounts_private();

  int log_fd = open_agent_log(spec);
  int release[2], errors[2];
  if (pipe2(release, O_CLOEXEC) != 0 || pipe2(errors, O_CLOEXEC) != 0) throw_errno("pipe");

  // No CLONE_NEWNS: the init shares our mount namespace until released, so it sees the root we
  // build below once its user namespace (needed for the idmapped layers) exists.
  // CLONE_PARENT: the init is the shim's child, so the shim reaps it and pids cannot be reused
  // under it.
  long flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP |
               CLONE_PARENT | SIGCHLD;
  pid_t pid = static_cast<pid_t>(syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr));
  if (pid < 0) throw_errno("clone");
  if (pid == 0) {
    close(release[1]);
    close(errors[0]);
    sandbox_init(spec, release[0], errors[1], log_fd);
  }
  close(release[0]);
  close(errors[1]);
  try {
    write_id_maps(pid, spec.id_base, spec.id_count);
    int userns = open(("/proc/" + std::to_string(pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
    if (userns < 0) throw_errno("open user namespace");
    int loop_number = build_root(spec, userns);
    close(userns);

    if (spec.internet) HostNetwork(NetworkConfig{spec.bridge, spec.subnet}).attach(spec.slot, pid);

    if (write(release[1], "g", 1) != 1) throw_errno("release the sandbox init");
    close(release[1]);
    std::string error = read_all(errors[0]);  // EOF = the agent was exec'd
    close(errors[0]);
    if (!error.empty()) throw std::runtime_error(error);
    return {pid, loop_number};
  } catch (...) {
    kill(pid, SIGKILL);
    throw;
  }
}

// A user namespace with the sandbox's id mapping, only to idmap the layers of a restore (CRIU
// makes the sandbox's own one from the images, with the same mapping). Its holder is a child
// that waits for the end of our pipe.
struct MappingNamespace {
  pid_t holder = -1;
  int fd = -1;
  ~MappingNamespace() {
    if (fd >= 0) close(fd);
    if (holder > 0) {
      kill(holder, SIGKILL);
      while (waitpid(holder, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
};

void make_mapping_namespace(const LaunchSpec& spec, MappingNamespace& ns) {
  int hold[2];
  if (pipe2(hold, O_CLOEXEC) != 0) throw_errno("pipe");
  pid_t pid = static_cast<pid_t>(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
  if (pid < 0) throw_errno("clone user namespace");
  if (pid == 0) {
    close(hold[1]);
    char c;
    (void)!read(hold[0], &c, 1);
    _exit(0);
  }
  close(hold[0]);
  ns.holder = pid;
  write_id_maps(pid, spec.id_base, spec.id_count);
  ns.fd = open(("/proc/" + std::to_string(pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
  close(hold[1]);
  if (ns.fd < 0) throw_errno("open user namespace");
}

// Restore: the same cgroups and root as a boot, then CRIU in place of the launcher (so the
// restored init, CRIU's sibling, is the shim's child). Returns only on failure.
void restore(const LaunchSpec& spec) {
  if (chdir(spec.sandbox_dir.c_str()) != 0) throw_errno("enter sandbox dir");
  create_cgroups(spec.cgroups, spec.limits);
  join_cgroups(spec.cgroups, getpid());  // CRIU and the tree it restores live in them
  make_mounts_private();
  int log_fd = open_agent_log(spec);
  int loop_number;
  {
    MappingNamespace ns;
    make_mapping_namespace(spec, ns);
    loop_number = build_root(spec, ns.fd);
  }
  std::string pidfile = spec.sandbox_dir + "/restored.pid";
  unlink(pidfile.c_str());
  CriuRestore r;
  r.criu = spec.criu_path;
  r.images_dir = spec.checkpoint_dir;
  r.log_file = spec.sandbox_dir + "/restore.log";
  r.root = spec.sandbox_dir + "/" + kRootfs;
  r.pidfile = pidfile;
  r.stdout_fd = log_fd;
  r.stdout_key = spec.stdout_key;
  std::vector<std::string> args = criu_restore_argv(r);

  // CRIU gets: /dev/null as stdio, the agent's log (not close-on-exec), nothing else.
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) throw_errno("open /dev/null");
  if (dup2(null_fd, 0) < 0) throw_errno("dup2");
  if (fcntl(log_fd, F_SETFD, 0) != 0) throw_errno("fcntl");
  write_all(kReportFd, format_launch_restoring(loop_number));
  close(kReportFd);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const char* envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", nullptr};
  execve(spec.criu_path.c_str(), argv.data(), const_cast<char* const*>(envp));
  _exit(127);  // the report is already out; the shim sees the exit status
}

}  // namespace

int main() {
  signal(SIGPIPE, SIG_IGN);
  std::string report;
  try {
    LaunchSpec spec = launch_spec_from_json(read_all(0));
    if (!spec.checkpoint_dir.empty()) restore(spec);  // returns only by throwing
    Launched l = launch(spec);
    report = format_launch_ok(l.pid, l.loop);
  } catch (const std::exception& e) {
    report = format_launch_error(e.what());
  }
  write_all(kReportFd, report);
  return report.rfind("OK ", 0) == 0 ? 0 : 1;
}
