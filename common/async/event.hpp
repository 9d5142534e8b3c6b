#pragma once
// A broadcast wake-up for coroutines on one io_context thread: waiters re-check their condition
// after every wake, so a notify with nobody waiting is simply lost (by design).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <list>

namespace cove::async {

namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

class Event {
 public:
  explicit Event(net::any_io_executor executor) : executor_(std::move(executor)) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void notify_all() {
    for (auto* timer : waiters_) timer->cancel();
  }

  // True when woken by notify_all, false when the deadline passed first.
  net::awaitable<bool> wait_until(Clock::time_point deadline) {
    net::steady_timer timer(executor_, deadline);
    auto it = waiters_.insert(waiters_.end(), &timer);
    boost::system::error_code ec;
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    waiters_.erase(it);
    co_return ec == net::error::operation_aborted;
  }

  net::awaitable<void> wait() { co_await wait_until(Clock::time_point::max()); }

 private:
  net::any_io_executor executor_;
  std::list<net::steady_timer*> waiters_;
};

}  // namespace cove::async
