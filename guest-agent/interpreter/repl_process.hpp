#pragma once
// A REPL child process of the agent's own kernels (node, bash): its own session and process
// group, user output on fd 1/2 pipes, and a separate request/reply channel so nothing the user
// prints can be taken for protocol. Everything is read on readiness with plain non-blocking
// reads, in handler order, so a reply is never processed before output the child wrote earlier
// has been read (drain_output) and output is never reported twice or out of order.
#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "async/event.hpp"
#include "process/registry.hpp"

namespace cove::interpreter {

namespace net = boost::asio;

struct ReplProcessSpec {
  std::vector<std::string> argv;  // argv[0] is searched in the PATH of `env`
  std::vector<std::string> env;   // "KEY=value"
  std::string cwd;
  bool requests_on_stdin = false;  // bash reads commands on fd 0; otherwise fd 0 is /dev/null
  int requests_fd = 3;             // the child's request fd when not on stdin
  int replies_fd = 4;              // the child's reply fd
  bool merge_stderr = false;       // fd 2 shares fd 1's pipe (all output reported as stdout)
};

class ReplProcess : public std::enable_shared_from_this<ReplProcess> {
 public:
  struct Handlers {
    std::function<void(bool is_stderr, std::string text)> output;
    std::function<void(std::string line)> reply;
    // After the last output and replies were delivered.
    std::function<void(int wait_status)> exited;
  };

  // Throws KernelError (no such program, bad cwd, fork failure).
  static std::shared_ptr<ReplProcess> spawn(net::any_io_executor executor,
                                            process::Registry& registry,
                                            const ReplProcessSpec& spec, Handlers handlers);
  ~ReplProcess();

  pid_t pid() const { return pid_; }
  bool running() const { return !exited_; }

  // Writes to the request channel; false if the child is gone.
  net::awaitable<bool> send(std::string bytes);
  // Closes the request channel (a graceful stop: both REPLs exit on EOF).
  void close_requests();
  // Reads what fd 1/2 hold right now and delivers it; `final` also flushes a trailing partial
  // UTF-8 sequence.
  void drain_output(bool final);
  // Signals the whole process group (the REPL and whatever user code started in it).
  void signal_group(int sig);
  // Stops delivering to the handlers (the kernel no longer cares about this process).
  void detach();
  // True once the child was reaped; false at the deadline.
  net::awaitable<bool> wait_exit(std::chrono::steady_clock::time_point deadline);

 private:
  enum Channel { out = 0, err = 1, replies = 2 };
  ReplProcess(net::any_io_executor executor, pid_t pid, Handlers handlers);
  void watch(Channel channel);
  bool read_channel(Channel channel, bool final);  // false at EOF
  void on_exit(int wait_status);
  void deliver_output(bool is_stderr, std::string& pending, bool final);

  net::any_io_executor executor_;
  pid_t pid_ = -1;
  Handlers handlers_;
  std::optional<net::posix::stream_descriptor> readers_[3];
  std::optional<net::posix::stream_descriptor> requests_;
  std::string pending_[3];  // partial UTF-8 (output) or partial line (replies)
  bool exited_ = false;
  async::Event exit_event_;
};

// The kernel message timestamp form: 2026-11-30T06:53:49.077610+00:00.
std::string iso_timestamp_now();

// The longest prefix of `bytes` that does not end inside a UTF-8 sequence.
size_t complete_utf8_prefix(const std::string& bytes);

}  // namespace cove::interpreter
