#pragma once
// Byte pumping between a host-channel connection and a port inside the sandbox, done by the
// kernel: io_uring splice through a pipe per direction, on one dedicated thread, so proxied
// traffic never touches the agent's request loop or user-space buffers.
// CRIU cannot dump an io_uring, so a checkpoint stops the splicer (ending every session) and the
// ring exists only while it runs; start, stop and add are called from one thread.
#include <liburing.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

namespace cove::netio {

class Splicer {
 public:
  Splicer() = default;
  ~Splicer();
  Splicer(const Splicer&) = delete;
  Splicer& operator=(const Splicer&) = delete;

  // Sets up the ring and its thread; true at once when running. Callable again after stop().
  bool start(std::string* error);
  // Ends every session (their sockets are closed), joins the thread and closes the ring and the
  // wake-up eventfd, so the process holds no io_uring (nor its worker threads). Idempotent.
  void stop();
  bool running() const { return thread_.joinable(); }
  // Takes ownership of both sockets; each direction runs until EOF, then the write side is shut
  // down; an error in either direction ends both. Starts the splicer when stopped; false (both
  // sockets closed) when it cannot run.
  bool add(int fd_a, int fd_b);
  size_t active_sessions() const { return active_.load(); }

 private:
  struct Session;
  struct Direction;
  void run();
  void accept_pending();
  void begin(Session* s);
  void submit_in(Direction* d);
  void submit_out(Direction* d);
  void complete(Direction* d, bool out_op, int res);
  void abort(Session* s);
  void maybe_free(Session* s);
  void arm_wakeup();
  void drain_and_exit();

  io_uring ring_{};
  bool ring_ready_ = false;
  int wake_fd_ = -1;
  uint64_t wake_buf_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<std::pair<int, int>> pending_;
  std::unordered_set<Session*> sessions_;  // the splicer thread's alone
  std::atomic<size_t> active_{0};
};

}  // namespace cove::netio
