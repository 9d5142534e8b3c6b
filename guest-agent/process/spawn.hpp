#pragma once
// Starting a child: its own session and process group (so signals reach the whole tree), the
// requested user and groups, pipes or a pty for stdio. Everything the child needs is prepared
// before fork so the child only makes async-signal-safe system calls.
#include <sys/ioctl.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace cove::process {

enum class StdinMode { pipe, null };

struct SpawnSpec {
  std::string command;             // as requested; searched in the child's PATH without '/'
  std::vector<std::string> args;   // argv[1..]
  std::vector<std::string> env;    // "KEY=value"
  std::string cwd;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  StdinMode stdin_mode = StdinMode::pipe;
  std::optional<winsize> pty;      // set: stdio is a new pty of this size
};

struct SpawnedChild {
  pid_t pid = -1;
  int stdin_fd = -1;   // write end (pipe mode with StdinMode::pipe)
  int stdout_fd = -1;  // read ends (pipe mode)
  int stderr_fd = -1;
  int pty_fd = -1;     // master (pty mode)
};

// RLIMIT_NPROC for every child (0: none, the default). The sandbox's pids limit covers the agent
// too; capping each uid's processes below it keeps slots for the agent and for another user, so a
// fork bomb of `user` cannot stop root (or the agent) from starting the command that ends it.
void set_child_process_limit(unsigned long limit);

// Returns the child, or errno of the failing step (fork EAGAIN, openpty, pipe).
SpawnedChild spawn_child(const SpawnSpec& spec, int* error);

// Candidate executable paths for `command` under the PATH of `env` (execvp's search order).
std::vector<std::string> executable_candidates(const std::string& command,
                                               const std::vector<std::string>& env);

}  // namespace cove::process
