// OutputHub: replay buffer, fan-out, end delivery and congestion (backpressure) signalling.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "process/output.hpp"

namespace net = boost::asio;
using namespace std::chrono_literals;
using cove::process::ExitInfo;
using cove::process::OutputEvent;
using cove::process::OutputHub;
using cove::process::OutputStream;
using cove::process::Subscription;

namespace {

std::shared_ptr<OutputHub> make_hub(net::io_context& io, size_t replay, size_t per_subscriber) {
  return std::make_shared<OutputHub>(io.get_executor(), replay, per_subscriber);
}

// Everything queued for `sub`, data bytes concatenated.
std::string drain_data(Subscription& sub) {
  std::string out;
  while (auto ev = sub.pop()) {
    if (ev->kind == OutputEvent::Kind::data) out += ev->bytes;
  }
  return out;
}

std::vector<OutputEvent> drain(Subscription& sub) {
  std::vector<OutputEvent> out;
  while (auto ev = sub.pop()) out.push_back(std::move(*ev));
  return out;
}

ExitInfo exit_info(int code) {
  ExitInfo e;
  e.exit_code = code;
  e.exited = true;
  e.status = "exit status " + std::to_string(code);
  if (code) e.error = e.status;
  return e;
}

void run_briefly(net::io_context& io) {
  io.restart();
  io.run_for(20ms);
}

}  // namespace

TEST(OutputHub, ReplayBufferWhenNobodySubscribed) {
  net::io_context io;
  auto hub = make_hub(io, 1024, 1024);
  hub->publish_data(OutputStream::stdout_stream, "out1 ");
  hub->publish_data(OutputStream::stderr_stream, "err1");
  hub->publish_data(OutputStream::stdout_stream, "");  // empty chunks are dropped
  EXPECT_EQ(hub->replay_bytes(), 9u);

  auto sub = hub->subscribe(true);
  auto events = drain(*sub);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, OutputEvent::Kind::data);
  EXPECT_EQ(events[0].stream, OutputStream::stdout_stream);
  EXPECT_EQ(events[0].bytes, "out1 ");
  EXPECT_EQ(events[1].stream, OutputStream::stderr_stream);
  EXPECT_EQ(events[1].bytes, "err1");
  EXPECT_EQ(hub->replay_bytes(), 0u);
}

TEST(OutputHub, ReplayDeliveredOnlyOnce) {
  net::io_context io;
  auto hub = make_hub(io, 1024, 1024);
  hub->publish_data(OutputStream::pty, "old output");
  {
    auto first = hub->subscribe(true);
    EXPECT_EQ(drain_data(*first), "old output");
  }
  auto second = hub->subscribe(true);
  EXPECT_FALSE(second->pop().has_value());
  // New output after the second subscriber attached reaches it live.
  hub->publish_data(OutputStream::pty, "new");
  EXPECT_EQ(drain_data(*second), "new");
}

TEST(OutputHub, SubscribeWithoutReplaySeesOnlyNewOutput) {
  net::io_context io;
  auto hub = make_hub(io, 1024, 1024);
  hub->publish_data(OutputStream::stdout_stream, "before");
  auto sub = hub->subscribe(false);
  EXPECT_FALSE(sub->pop().has_value());
  hub->publish_data(OutputStream::stdout_stream, "after");
  EXPECT_EQ(drain_data(*sub), "after");
}

TEST(OutputHub, BoundedReplayKeepsNewestBytes) {
  net::io_context io;
  auto hub = make_hub(io, 10, 1024);
  hub->publish_data(OutputStream::stdout_stream, "0123456789");
  hub->publish_data(OutputStream::stdout_stream, "abcde");
  EXPECT_EQ(hub->replay_bytes(), 10u);
  hub->publish_data(OutputStream::stderr_stream, "XY");
  EXPECT_EQ(hub->replay_bytes(), 10u);
  auto sub = hub->subscribe(true);
  auto events = drain(*sub);
  std::string all;
  for (const auto& ev : events) all += ev.bytes;
  EXPECT_EQ(all, "789abcdeXY");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().stream, OutputStream::stderr_stream);
  EXPECT_EQ(events.back().bytes, "XY");
}

TEST(OutputHub, BoundedReplaySingleHugeChunk) {
  net::io_context io;
  auto hub = make_hub(io, 8, 1024);
  hub->publish_data(OutputStream::stdout_stream, "this chunk is longer than the limit");
  EXPECT_EQ(hub->replay_bytes(), 8u);
  auto sub = hub->subscribe(true);
  EXPECT_EQ(drain_data(*sub), "he limit");
}

TEST(OutputHub, LiveFanOutToTwoSubscribers) {
  net::io_context io;
  auto hub = make_hub(io, 1024, 1024);
  auto a = hub->subscribe(false);
  auto b = hub->subscribe(true);
  hub->publish_data(OutputStream::stdout_stream, "one");
  hub->publish_data(OutputStream::stderr_stream, "two");
  EXPECT_EQ(hub->replay_bytes(), 0u);  // someone listened: nothing buffered for replay
  for (Subscription* s : {a.get(), b.get()}) {
    auto events = drain(*s);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].bytes, "one");
    EXPECT_EQ(events[0].stream, OutputStream::stdout_stream);
    EXPECT_EQ(events[1].bytes, "two");
    EXPECT_EQ(events[1].stream, OutputStream::stderr_stream);
  }
  // After one leaves, the other still receives.
  a.reset();
  hub->publish_data(OutputStream::stdout_stream, "three");
  EXPECT_EQ(drain_data(*b), "three");
  // After both leave, output goes to the replay buffer again.
  b.reset();
  hub->publish_data(OutputStream::stdout_stream, "four");
  EXPECT_EQ(hub->replay_bytes(), 4u);
}

TEST(OutputHub, EndDeliveredToCurrentAndLateSubscribers) {
  net::io_context io;
  auto hub = make_hub(io, 1024, 1024);
  auto live = hub->subscribe(false);
  hub->publish_data(OutputStream::stdout_stream, "x");
  EXPECT_FALSE(hub->ended());
  hub->publish_end(exit_info(3));
  EXPECT_TRUE(hub->ended());
  auto events = drain(*live);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, OutputEvent::Kind::end);
  EXPECT_EQ(events[1].exit.exit_code, 3);

  // A second publish_end is ignored; the first exit is kept.
  hub->publish_end(exit_info(4));
  EXPECT_FALSE(live->pop().has_value());

  for (bool replay : {false, true}) {
    auto late = hub->subscribe(replay);
    auto got = drain(*late);
    ASSERT_EQ(got.size(), 1u) << "replay=" << replay;
    EXPECT_EQ(got[0].kind, OutputEvent::Kind::end);
    EXPECT_EQ(got[0].exit.exit_code, 3);
    EXPECT_EQ(got[0].exit.status, "exit status 3");
    EXPECT_EQ(got[0].exit.error, "exit status 3");
  }
}

TEST(OutputHub, LateSubscriberGetsUnreadOutputThenEnd) {
  net::io_context io;
  auto hub = make_hub(io, 1024, 1024);
  hub->publish_data(OutputStream::stdout_stream, "unread");
  hub->publish_end(exit_info(0));
  auto late = hub->subscribe(true);
  auto got = drain(*late);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].kind, OutputEvent::Kind::data);
  EXPECT_EQ(got[0].bytes, "unread");
  EXPECT_EQ(got[1].kind, OutputEvent::Kind::end);
  EXPECT_FALSE(got[1].exit.error.has_value());
}

TEST(OutputHub, CongestionWhenSubscriberExceedsLimitClearedAfterPop) {
  net::io_context io;
  auto hub = make_hub(io, 1024, 4);
  auto fast = hub->subscribe(false);
  auto slow = hub->subscribe(false);
  hub->publish_data(OutputStream::stdout_stream, "abc");
  EXPECT_FALSE(hub->congested());
  drain(*fast);
  hub->publish_data(OutputStream::stdout_stream, "de");  // slow now holds 5 > 4
  EXPECT_TRUE(hub->congested());
  drain(*fast);
  EXPECT_TRUE(hub->congested());  // the fast one draining does not help the slow one

  // Someone waiting for the drain is woken when the slow subscriber catches up.
  bool woke = false, finished = false;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        woke = co_await hub->drained().wait_until(cove::async::Clock::now() + 5s);
        finished = true;
      },
      net::detached);
  run_briefly(io);
  ASSERT_FALSE(finished);  // parked on the event

  auto ev = slow->pop();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->bytes, "abc");
  EXPECT_FALSE(hub->congested());  // 2 bytes left
  run_briefly(io);
  EXPECT_TRUE(finished);
  EXPECT_TRUE(woke);
}

TEST(OutputHub, CongestionClearedWhenSlowSubscriberLeaves) {
  net::io_context io;
  auto hub = make_hub(io, 1024, 2);
  auto slow = hub->subscribe(false);
  hub->publish_data(OutputStream::stdout_stream, "xyz");
  EXPECT_TRUE(hub->congested());
  slow.reset();
  EXPECT_FALSE(hub->congested());
}

TEST(OutputHub, SubscriberWokenOnDelivery) {
  net::io_context io;
  auto hub = make_hub(io, 1024, 1024);
  auto sub = hub->subscribe(false);
  bool woke = false, finished = false;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        woke = co_await sub->wake().wait_until(cove::async::Clock::now() + 5s);
        finished = true;
      },
      net::detached);
  run_briefly(io);
  ASSERT_FALSE(finished);
  hub->publish_data(OutputStream::stdout_stream, "ping");
  run_briefly(io);
  EXPECT_TRUE(finished);
  EXPECT_TRUE(woke);
  EXPECT_EQ(drain_data(*sub), "ping");
}
