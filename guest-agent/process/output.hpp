#pragma once
// Fan-out of one process's output to any number of subscribers (RPC streams). Output produced
// while nobody is subscribed goes into a bounded replay buffer that the next subscriber receives
// first. A subscriber that falls behind makes the hub report congestion so the process's readers
// pause (backpressure through the pipe) instead of buffering without bound.
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "async/event.hpp"
#include "process/exit_status.hpp"

namespace cove::process {

enum class OutputStream { stdout_stream, stderr_stream, pty };

struct OutputEvent {
  enum class Kind { data, end } kind = Kind::data;
  OutputStream stream = OutputStream::stdout_stream;
  std::string bytes;
  ExitInfo exit;  // for Kind::end
};

class OutputHub;

class Subscription {
 public:
  Subscription(std::shared_ptr<OutputHub> hub, async::net::any_io_executor executor);
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  std::optional<OutputEvent> pop();
  // Notified whenever an event is queued.
  async::Event& wake() { return wake_; }

 private:
  friend class OutputHub;
  std::shared_ptr<OutputHub> hub_;
  std::deque<OutputEvent> queue_;
  size_t queued_bytes_ = 0;
  async::Event wake_;
};

class OutputHub : public std::enable_shared_from_this<OutputHub> {
 public:
  OutputHub(async::net::any_io_executor executor, size_t replay_limit, size_t subscriber_limit);

  // With `replay`, the subscriber first receives what was buffered while nobody listened.
  // A subscriber to an ended process receives the end event too.
  std::unique_ptr<Subscription> subscribe(bool replay);

  void publish_data(OutputStream stream, std::string bytes);
  void publish_end(const ExitInfo& exit);

  // True while some subscriber holds more than its limit; readers then wait on drained().
  bool congested() const;
  async::Event& drained() { return drained_; }

  size_t replay_bytes() const { return replay_bytes_; }
  bool ended() const { return end_.has_value(); }

 private:
  friend class Subscription;
  void deliver(Subscription& sub, const OutputEvent& event);
  void on_consumed(Subscription& sub, size_t bytes);
  void remove(Subscription* sub);

  async::net::any_io_executor executor_;
  size_t replay_limit_;
  size_t subscriber_limit_;
  std::vector<Subscription*> subscribers_;
  std::deque<OutputEvent> replay_;
  size_t replay_bytes_ = 0;
  std::optional<ExitInfo> end_;
  async::Event drained_;
};

}  // namespace cove::process
