#include "process/output.hpp"

#include <algorithm>

namespace cove::process {

Subscription::Subscription(std::shared_ptr<OutputHub> hub, async::net::any_io_executor executor)
    : hub_(std::move(hub)), wake_(std::move(executor)) {}

Subscription::~Subscription() { hub_->remove(this); }

std::optional<OutputEvent> Subscription::pop() {
  if (queue_.empty()) return std::nullopt;
  OutputEvent ev = std::move(queue_.front());
  queue_.pop_front();
  hub_->on_consumed(*this, ev.bytes.size());
  return ev;
}

OutputHub::OutputHub(async::net::any_io_executor executor, size_t replay_limit, size_t subscriber_limit)
    : executor_(executor), replay_limit_(replay_limit), subscriber_limit_(subscriber_limit),
      drained_(executor) {}

std::unique_ptr<Subscription> OutputHub::subscribe(bool replay) {
  auto sub = std::make_unique<Subscription>(shared_from_this(), executor_);
  if (replay) {
    for (auto& ev : replay_) deliver(*sub, ev);
    replay_.clear();
    replay_bytes_ = 0;
  }
  if (end_) {
    OutputEvent end;
    end.kind = OutputEvent::Kind::end;
    end.exit = *end_;
    deliver(*sub, end);
  }
  subscribers_.push_back(sub.get());
  return sub;
}

void OutputHub::deliver(Subscription& sub, const OutputEvent& event) {
  sub.queued_bytes_ += event.bytes.size();
  sub.queue_.push_back(event);
  sub.wake_.notify_all();
}

void OutputHub::publish_data(OutputStream stream, std::string bytes) {
  if (bytes.empty()) return;
  OutputEvent ev{OutputEvent::Kind::data, stream, std::move(bytes), {}};
  if (subscribers_.empty()) {
    replay_bytes_ += ev.bytes.size();
    replay_.push_back(std::move(ev));
    // Keep the newest output: drop whole old events, then trim the oldest one's head.
    while (replay_bytes_ > replay_limit_ && !replay_.empty()) {
      auto& oldest = replay_.front();
      size_t excess = replay_bytes_ - replay_limit_;
      if (oldest.bytes.size() <= excess) {
        replay_bytes_ -= oldest.bytes.size();
        replay_.pop_front();
      } else {
        oldest.bytes.erase(0, excess);
        replay_bytes_ -= excess;
      }
    }
    return;
  }
  for (auto* sub : subscribers_) deliver(*sub, ev);
}

void OutputHub::publish_end(const ExitInfo& exit) {
  if (end_) return;
  end_ = exit;
  OutputEvent ev;
  ev.kind = OutputEvent::Kind::end;
  ev.exit = exit;
  for (auto* sub : subscribers_) deliver(*sub, ev);
  drained_.notify_all();
}

bool OutputHub::congested() const {
  return std::any_of(subscribers_.begin(), subscribers_.end(),
                     [this](const Subscription* s) { return s->queued_bytes_ > subscriber_limit_; });
}

void OutputHub::on_consumed(Subscription& sub, size_t bytes) {
  bool was_over = sub.queued_bytes_ > subscriber_limit_;
  sub.queued_bytes_ -= bytes;
  if (was_over && sub.queued_bytes_ <= subscriber_limit_) drained_.notify_all();
}

void OutputHub::remove(Subscription* sub) {
  subscribers_.erase(std::remove(subscribers_.begin(), subscribers_.end(), sub), subscribers_.end());
  drained_.notify_all();
}

}  // namespace cove::process
