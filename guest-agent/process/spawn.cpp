#include "process/spawn.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pty.h>
#include <signal.h>
#include <string.h>
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
  for (const auto& a : spec.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* cwd = spec.cwd.c_str();
  const char* command = spec.command.c_str();

  pid_t pid = fork();
  if (pid < 0) return fail(errno);
  if (pid == 0) {
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    setsid();
    if (spec.pty) {
      ioctl(pty_slave, TIOCSCTTY, 0);
      dup2(pty_slave, 0);
      dup2(pty_slave, 1);
      dup2(pty_slave, 2);
    } else {
      int in = in_pipe[0];
      if (spec.stdin_mode == StdinMode::null) in = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (in >= 0) dup2(in, 0);
      dup2(out_pipe[1], 1);
      dup2(err_pipe[1], 2);
    }
    syscall(SYS_close_range, 3U, ~0U, 0U);
    if (int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC); fd >= 0) {
      // Let the kernel pick user processes before the agent under memory pressure.
      (void)!write(fd, "100", 3);
      close(fd);
    }
    if (setgroups(spec.groups.size(), spec.groups.data()) != 0) child_fail("setgroups", nullptr, errno, 126);
    if (setgid(spec.gid) != 0) child_fail("setgid", nullptr, errno, 126);
    if (setuid(spec.uid) != 0) child_fail("setuid", nullptr, errno, 126);
    if (chdir(cwd) != 0) child_fail("chdir", cwd, errno, 126);
    int exec_errno = ENOENT;
    for (const auto& candidate : candidates) {
      execve(candidate.c_str(), argv.data(), envp.data());
      // As execvp: keep searching past missing or inaccessible entries, remember EACCES.
      if (errno == EACCES) {
        exec_errno = EACCES;
      } else if (errno != ENOENT && errno != ENOTDIR) {
        exec_errno = errno;
        break;
      }
    }
    child_fail("exec", command, exec_errno, exec_errno == ENOENT ? 127 : 126);
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
