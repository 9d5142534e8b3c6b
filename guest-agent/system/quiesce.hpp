#pragma once
// Cooperation with a pause or checkpoint. Before the host freezes or checkpoints the sandbox it
// calls POST /freeze: the agent then lets go of what CRIU cannot dump (connections whose peer is
// the host, io_uring, inotify watches on overlayfs) and takes it back on the next POST /init
// (sent after every resume or restore) or POST /unfreeze (the pause was abandoned). Processes
// the agent started keep running throughout.
#include <boost/asio/awaitable.hpp>

#include <string>
#include <vector>

namespace cove::system {

namespace net = boost::asio;

// One part of the agent that holds something a checkpoint cannot carry.
class Quiescent {
 public:
  virtual ~Quiescent() = default;
  // Lets go; idempotent. `request_fd` is the connection carrying /freeze (-1 if none): it is
  // kept until its response is written, then closed by the server. Returns "" or what could not
  // be let go.
  virtual net::awaitable<std::string> let_go(int request_fd) = 0;
  // Takes back what let_go released; a no-op when nothing was let go.
  virtual void take_back() = 0;
};

class Quiesce {
 public:
  // Parts are let go in the order added and taken back in reverse. Each must outlive this.
  void add(Quiescent& part) { parts_.push_back(&part); }

  // Lets every part go (all of them, even after one reports a problem); "" when all did. A
  // resume while it waits stops it there: nothing is let go after the resume.
  net::awaitable<std::string> freeze(int request_fd);
  // Takes every part back; a no-op unless a freeze happened since the last resume.
  void resume();
  bool prepared() const { return prepared_; }

 private:
  std::vector<Quiescent*> parts_;
  bool prepared_ = false;
  unsigned long resumes_ = 0;
};

}  // namespace cove::system
