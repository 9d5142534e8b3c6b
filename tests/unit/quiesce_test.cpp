// system::Quiesce: parts let go in order and are taken back in reverse, every part runs even
// after one reports a problem, resume is a no-op unless a freeze happened, and a resume while a
// part is still letting go stops the freeze there.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <optional>
#include <string>
#include <vector>

#include "system/quiesce.hpp"

namespace net = boost::asio;
using cove::system::Quiesce;
using cove::system::Quiescent;

namespace {

class Part : public Quiescent {
 public:
  Part(std::string name, std::vector<std::string>& log, std::string problem = "")
      : name_(std::move(name)), log_(log), problem_(std::move(problem)) {}
  net::awaitable<std::string> let_go(int request_fd) override {
    log_.push_back("let_go " + name_ + " " + std::to_string(request_fd));
    if (pause_) {
      net::steady_timer timer(co_await net::this_coro::executor, *pause_);
      co_await timer.async_wait(net::use_awaitable);
    }
    co_return problem_;
  }
  void take_back() override { log_.push_back("take_back " + name_); }
  std::optional<std::chrono::milliseconds> pause_;

 private:
  std::string name_;
  std::vector<std::string>& log_;
  std::string problem_;
};

// Runs freeze to completion and returns its result.
std::optional<std::string> freeze(net::io_context& io, Quiesce& q, int fd) {
  std::optional<std::string> result;
  net::co_spawn(io, q.freeze(fd), [&](std::exception_ptr e, std::string r) {
    if (!e) result = std::move(r);
  });
  io.restart();
  io.run_for(std::chrono::seconds(2));
  return result;
}

}  // namespace

TEST(Quiesce, LetsGoInOrderAndTakesBackInReverse) {
  net::io_context io;
  std::vector<std::string> log;
  Part a("a", log), b("b", log);
  Quiesce q;
  q.add(a);
  q.add(b);
  EXPECT_FALSE(q.prepared());
  EXPECT_EQ(freeze(io, q, 7), std::optional<std::string>(""));
  EXPECT_TRUE(q.prepared());
  q.resume();
  EXPECT_FALSE(q.prepared());
  EXPECT_EQ(log, (std::vector<std::string>{"let_go a 7", "let_go b 7", "take_back b", "take_back a"}));
}

TEST(Quiesce, ResumeWithoutFreezeDoesNothingAndFreezeRepeats) {
  net::io_context io;
  std::vector<std::string> log;
  Part a("a", log);
  Quiesce q;
  q.add(a);
  q.resume();
  EXPECT_TRUE(log.empty());
  // Idempotent from the caller's view: a second freeze lets go again (new connections may have
  // come), and one resume takes back once.
  EXPECT_EQ(freeze(io, q, -1), std::optional<std::string>(""));
  EXPECT_EQ(freeze(io, q, -1), std::optional<std::string>(""));
  q.resume();
  q.resume();
  EXPECT_EQ(log, (std::vector<std::string>{"let_go a -1", "let_go a -1", "take_back a"}));
}

TEST(Quiesce, EveryPartRunsAndProblemsAreJoined) {
  net::io_context io;
  std::vector<std::string> log;
  Part a("a", log, "a stuck"), b("b", log), c("c", log, "c stuck");
  Quiesce q;
  q.add(a);
  q.add(b);
  q.add(c);
  EXPECT_EQ(freeze(io, q, 3), std::optional<std::string>("a stuck; c stuck"));
  EXPECT_EQ(log.size(), 3u);
}

TEST(Quiesce, ResumeDuringAFreezeStopsItThere) {
  net::io_context io;
  std::vector<std::string> log;
  Part a("a", log), b("b", log);
  a.pause_ = std::chrono::milliseconds(50);
  Quiesce q;
  q.add(a);
  q.add(b);
  std::optional<std::string> result;
  net::co_spawn(io, q.freeze(1), [&](std::exception_ptr, std::string r) { result = std::move(r); });
  io.run_for(std::chrono::milliseconds(10));  // a is letting go
  ASSERT_FALSE(result);
  q.resume();
  io.restart();
  io.run_for(std::chrono::seconds(1));
  EXPECT_EQ(result, std::optional<std::string>("interrupted by a resume"));
  EXPECT_FALSE(q.prepared());
  // b was never let go after the resume.
  EXPECT_EQ(log, (std::vector<std::string>{"let_go a 1", "take_back b", "take_back a"}));
}
