#pragma once
// Runs a piece of a test in a forked child: seccomp filters and capability drops are one-way, so
// they must never touch the test process itself. The child reports through a pipe.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <functional>
#include <string>

namespace cove::test {

struct ChildOutcome {
  int exit_code = -1;  // -1: killed by a signal
  std::string output;  // everything the child wrote to its report fd
};

inline void report(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// `body` gets the report fd; an exception in it becomes "exception: <what>" and exit code 101.
inline ChildOutcome run_in_child(const std::function<void(int report_fd)>& body) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {-2, "pipe failed"};
  pid_t pid = fork();
  if (pid < 0) return {-2, "fork failed"};
  if (pid == 0) {
    close(fds[0]);
    int code = 0;
    try {
      body(fds[1]);
    } catch (const std::exception& e) {
      report(fds[1], std::string("exception: ") + e.what() + "\n");
      code = 101;
    }
    _exit(code);
  }
  close(fds[1]);
  ChildOutcome outcome;
  char buffer[4096];
  for (;;) {
    ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    outcome.output.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

}  // namespace cove::test
