#pragma once
// One process started by the agent: its output readers, stdin/pty input, signals, deadline and
// exit. Knows nothing of RPC; the registry owns it.
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "process/output.hpp"
#include "process/spawn.hpp"

namespace cove::process {

namespace net = boost::asio;

// The configuration as the client sent it; List returns it verbatim.
struct RequestedConfig {
  std::string cmd;
  std::vector<std::string> args;
  std::map<std::string, std::string> envs;
  std::optional<std::string> cwd;
};

struct InputError {
  enum class Kind { none, not_supported, closed, io } kind = Kind::none;
  std::string message;
  bool ok() const { return kind == Kind::none; }
};

class Process : public std::enable_shared_from_this<Process> {
 public:
  Process(net::any_io_executor executor, pid_t pid, const SpawnedChild& child, RequestedConfig config,
          std::optional<std::string> tag, std::shared_ptr<OutputHub> hub);
  ~Process();

  pid_t pid() const { return pid_; }
  const std::optional<std::string>& tag() const { return tag_; }
  const RequestedConfig& config() const { return config_; }
  bool is_pty() const { return pty_ != nullptr; }
  bool finished() const { return hub_->ended(); }
  OutputHub& output() { return *hub_; }

  // Starts the output readers (after the first subscriber exists).
  void start_readers();
  // SIGKILL the whole group at `deadline` (Connect-Timeout-Ms on Start).
  void kill_at(std::chrono::steady_clock::time_point deadline);

  // Signals the process group. SIGTERM/SIGKILL also stop waiting for output once it exits.
  bool signal(int signo);
  net::awaitable<InputError> write_stdin(std::string data);
  net::awaitable<InputError> write_pty(std::string data);
  InputError close_stdin();
  InputError resize(unsigned short cols, unsigned short rows);

  // Called by the registry when waitpid() reports the exit.
  void on_exit(int wait_status);

  // Called once output is drained and the exit is known; set by the registry.
  std::function<void(Process&)> on_finished;

 private:
  net::awaitable<void> read_output(net::posix::stream_descriptor& fd, OutputStream stream,
                                   size_t chunk);
  net::awaitable<InputError> write_input(net::posix::stream_descriptor& fd, std::string data);
  void maybe_finish();
  void stop_readers();

  net::any_io_executor executor_;
  pid_t pid_;
  RequestedConfig config_;
  std::optional<std::string> tag_;
  std::shared_ptr<OutputHub> hub_;
  std::unique_ptr<net::posix::stream_descriptor> stdin_, stdout_, stderr_, pty_;
  int open_readers_ = 0;
  std::optional<int> wait_status_;
  bool skip_remaining_output_ = false;
  net::steady_timer deadline_;
  bool writing_ = false;
  async::Event write_turn_;
};

}  // namespace cove::process
