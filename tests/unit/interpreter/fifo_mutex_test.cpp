#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <vector>

#include "async/fifo_mutex.hpp"

namespace cove::async {
namespace {

TEST(FifoMutex, HandsTheLockOverInArrivalOrderOneAtATime) {
  net::io_context io;
  FifoMutex mutex(io.get_executor());
  std::vector<int> order;
  int inside = 0, max_inside = 0;
  for (int i = 0; i < 5; ++i) {
    net::co_spawn(
        io,
        [&, i]() -> net::awaitable<void> {
          auto guard = co_await mutex.lock();
          ++inside;
          max_inside = std::max(max_inside, inside);
          order.push_back(i);
          net::steady_timer t(io, std::chrono::milliseconds(5));
          co_await t.async_wait(net::use_awaitable);
          --inside;
        },
        net::detached);
  }
  io.run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(max_inside, 1);
  EXPECT_FALSE(mutex.locked());
  EXPECT_EQ(mutex.waiting(), 0u);
}

}  // namespace
}  // namespace cove::async
