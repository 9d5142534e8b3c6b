#pragma once
// A mutex for coroutines on one io_context thread that hands the lock over in arrival order, so
// executions queued on one context run first come, first served.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <list>
#include <memory>
#include <utility>

namespace cove::async {

namespace net = boost::asio;

class FifoMutex {
 public:
  explicit FifoMutex(net::any_io_executor executor) : executor_(std::move(executor)) {}
  FifoMutex(const FifoMutex&) = delete;
  FifoMutex& operator=(const FifoMutex&) = delete;

  // Unlocks when destroyed (also when the holding coroutine is torn down by an exception).
  class Guard {
   public:
    explicit Guard(FifoMutex* mutex) : mutex_(mutex) {}
    Guard(Guard&& other) noexcept : mutex_(std::exchange(other.mutex_, nullptr)) {}
    Guard& operator=(Guard&&) = delete;
    ~Guard() {
      if (mutex_) mutex_->unlock();
    }

   private:
    FifoMutex* mutex_;
  };

  net::awaitable<Guard> lock() {
    if (!locked_) {
      locked_ = true;
      co_return Guard(this);
    }
    // Each waiter owns a timer that never fires on its own; unlock() cancels the first one,
    // which hands the (still set) lock to that waiter.
    auto timer = std::make_shared<net::steady_timer>(executor_, std::chrono::steady_clock::time_point::max());
    waiters_.push_back(timer);
    boost::system::error_code ec;
    co_await timer->async_wait(net::redirect_error(net::use_awaitable, ec));
    co_return Guard(this);
  }

  bool locked() const { return locked_; }
  size_t waiting() const { return waiters_.size(); }

 private:
  void unlock() {
    if (waiters_.empty()) {
      locked_ = false;
      return;
    }
    auto next = waiters_.front();
    waiters_.pop_front();
    next->cancel();
  }

  net::any_io_executor executor_;
  bool locked_ = false;
  std::list<std::shared_ptr<net::steady_timer>> waiters_;
};

}  // namespace cove::async
