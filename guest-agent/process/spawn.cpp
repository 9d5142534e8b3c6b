#include "process/spawn.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <pty.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace cove::process {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Child-side: no allocation, no locks. The message goes out in one write so it arrives as one
// output event.
void append(char* buf, size_t cap, size_t& len, const char* s) {
  while (*s && len + 1 < cap) buf[len++] = *s++;
}

[[noreturn]] void child_fail(const char* what, const char* subject, int err, int code) {
  char buf[512];
  size_t len = 0;
  append(buf, sizeof buf, len, "cove-agent: ");
  append(buf, sizeof buf, len, what);
  if (subject) {
    append(buf, sizeof buf, len, " ");
    append(buf, sizeof buf, len, subject);
  }
  append(buf, sizeof buf, len, ": ");
  append(buf, sizeof buf, len, strerrordesc_np(err));
  append(buf, sizeof buf, len, "\n");
  (void)!::write(2, buf, len);
  _exit(code);
}

}  // namespace

std::vector<std::string> executable_candidates(const std::string& command,
                                               const std::vector<std::string>& env) {
  if (command.find('/') != std::string::npos) return {command};
  std::string path = kDefaultPath;
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    out.push_back(dir + "/" + command);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// What the child needs, prepared by the parent. The child shares the parent's memory until it
// execs (CLONE_VM|CLONE_VFORK, as posix_spawn does), so it only reads this and makes raw
// system calls: glibc's setuid & co. would try to change every thread of the *parent*.
namespace {
rlim_t child_process_limit = 0;

struct ChildArgs {
  const SpawnSpec* spec;
  rlim_t process_limit;
  int in_fd, out_fd, err_fd, pty_slave;
  const std::vector<std::string>* candidates;
  char* const* argv;
  char* const* envp;
};

int child_main(void* raw) {
  const auto& a = *static_cast<const ChildArgs*>(raw);
  const SpawnSpec& spec = *a.spec;
  // The parent blocked every signal around clone so none can run one of its handlers on this
  // shared memory; reset the dispositions (not CLONE_SIGHAND: they are the child's own), then
  // unblock.
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  setsid();
  if (a.pty_slave >= 0) {
    ioctl(a.pty_slave, TIOCSCTTY, 0);
    dup2(a.pty_slave, 0);
    dup2(a.pty_slave, 1);
    dup2(a.pty_slave, 2);
  } else {
    int in = a.in_fd >= 0 ? a.in_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in >= 0) dup2(in, 0);
    dup2(a.out_fd, 1);
    dup2(a.err_fd, 2);
  }
  syscall(SYS_close_range, 3U, ~0U, 0U);
  if (a.process_limit != 0) {
    struct rlimit limit {a.process_limit, a.process_limit};
    syscall(SYS_prlimit64, 0, RLIMIT_NPROC, &limit, nullptr);
  }
  if (syscall(SYS_setgroups, spec.groups.size(), spec.groups.data()) != 0) child_fail("setgroups", nullptr, errno, 126);
  if (syscall(SYS_setresgid, spec.gid, spec.gid, spec.gid) != 0) child_fail("setgid", nullptr, errno, 126);
  if (syscall(SYS_setresuid, spec.uid, spec.uid, spec.uid) != 0) child_fail("setuid", nullptr, errno, 126);
  if (chdir(spec.cwd.c_str()) != 0) child_fail("chdir", spec.cwd.c_str(), errno, 126);
  int exec_errno = ENOENT;
  for (const auto& candidate : *a.candidates) {
    execve(candidate.c_str(), a.argv, a.envp);
    // As execvp: keep searching past missing or inaccessible entries, remember EACCES.
    if (errno == EACCES) {
      exec_errno = EACCES;
    } else if (errno != ENOENT && errno != ENOTDIR) {
      exec_errno = errno;
      break;
    }
  }
  child_fail("exec", spec.command.c_str(), exec_errno, exec_errno == ENOENT ? 127 : 126);
}
}  // namespace

void set_child_process_limit(unsigned long limit) { child_process_limit = limit; }

SpawnedChild spawn_child(const SpawnSpec& spec, int* error) {
  *error = 0;
  SpawnedChild child;
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  int pty_master = -1, pty_slave = -1;

  auto fail = [&](int err) {
    for (int* fd : {&in_pipe[0], &in_pipe[1], &out_pipe[0], &out_pipe[1], &err_pipe[0],
                    &err_pipe[1], &pty_master, &pty_slave}) {
      close_fd(*fd);
    }
    *error = err;
    return SpawnedChild{};
  };

  if (spec.pty) {
    winsize ws = *spec.pty;
    if (openpty(&pty_master, &pty_slave, nullptr, nullptr, &ws) != 0) return fail(errno);
    fcntl(pty_master, F_SETFD, FD_CLOEXEC);
    fcntl(pty_slave, F_SETFD, FD_CLOEXEC);
  } else {
    if (spec.stdin_mode == StdinMode::pipe && pipe2(in_pipe, O_CLOEXEC) != 0) return fail(errno);
    if (pipe2(out_pipe, O_CLOEXEC) != 0) return fail(errno);
    if (pipe2(err_pipe, O_CLOEXEC) != 0) return fail(errno);
  }

  // Everything the child touches, built now.
  std::vector<std::string> candidates = executable_candidates(spec.command, spec.env);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(spec.command.c_str()));
  for (const auto& arg : spec.args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  ChildArgs args{&spec,      child_process_limit, in_pipe[0],  out_pipe[1],
                 err_pipe[1], pty_slave,           &candidates, argv.data(), envp.data()};

  // The parent is suspended until the child execs or exits, so one stack serves every spawn
  // (spawns happen on the agent's single io thread).
  alignas(64) static char child_stack[64 * 1024];
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t pid = clone(child_main, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) return fail(clone_errno);
  // Let the kernel pick user processes before the agent under memory pressure. Written from
  // here, after the child exec'd: while it still shared our memory, the kernel would have
  // applied the value to the agent as well.
  if (int fd = open(("/proc/" + std::to_string(pid) + "/oom_score_adj").c_str(), O_WRONLY | O_CLOEXEC); fd >= 0) {
    (void)!write(fd, "100", 3);
    close(fd);
  }

  child.pid = pid;
  if (spec.pty) {
    close_fd(pty_slave);
    child.pty_fd = pty_master;
  } else {
    close_fd(in_pipe[0]);
    close_fd(out_pipe[1]);
    close_fd(err_pipe[1]);
    child.stdin_fd = in_pipe[1];
    child.stdout_fd = out_pipe[0];
    child.stderr_fd = err_pipe[0];
  }
  return child;
}

}  // namespace cove::process
