// Polling watchers: ids, lookup and removal, the event cap and idle reaping with injected time.
#include <gtest/gtest.h>

#include <sys/inotify.h>

#include <boost/asio/io_context.hpp>
#include <set>

#include "filesystem/watcher_registry.hpp"
#include "temp_dir.hpp"

namespace net = boost::asio;
using namespace std::chrono_literals;
using cove::filesystem::Clock;
using cove::filesystem::generate_watcher_id;
using cove::filesystem::kPollingIdleLimit;
using cove::filesystem::kPollingMaxEvents;
using cove::filesystem::Watcher;
using cove::filesystem::WatcherOptions;
using cove::filesystem::WatcherRegistry;
using cove::system::UserDatabase;
using cove::test::TempDir;

namespace {

struct Fixture {
  std::shared_ptr<Watcher> watcher(size_t max_pending = kPollingMaxEvents) {
    std::string error;
    WatcherOptions o;
    o.max_pending = max_pending;
    auto w = Watcher::start(io.get_executor(), dir.path(), o, users, error);
    if (!w) throw std::runtime_error(error);
    return w;
  }
  ~Fixture() {
    io.restart();
    io.run_for(std::chrono::milliseconds(20));
  }
  TempDir dir;
  net::io_context io;
  UserDatabase users;
};

std::string create_record(int wd, const std::string& name) {
  inotify_event ev{};
  ev.wd = wd;
  ev.mask = IN_CREATE;
  ev.len = 32;
  std::string out(reinterpret_cast<const char*>(&ev), sizeof ev);
  std::string padded = name;
  padded.resize(32, '\0');
  return out + padded;
}

}  // namespace

TEST(WatcherRegistry, IdsAreWPlusTwentyLowercaseAlnum) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto id = generate_watcher_id();
    ASSERT_EQ(id.size(), 21u);
    EXPECT_EQ(id[0], 'w');
    for (char c : id.substr(1)) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(WatcherRegistry, AddUseRemove) {
  Fixture f;
  auto reg = std::make_shared<WatcherRegistry>();
  auto w = f.watcher();
  const auto t0 = Clock::now();
  auto id = reg->add(w, t0);
  EXPECT_EQ(reg->use(id, t0), w);
  EXPECT_EQ(reg->use("wunknown", t0), nullptr);
  EXPECT_TRUE(reg->remove(id));
  EXPECT_TRUE(w->closed());
  EXPECT_FALSE(reg->remove(id));
  EXPECT_EQ(reg->use(id, t0), nullptr);
}

TEST(WatcherRegistry, IdleWatchersAreReapedAfterTheLimit) {
  Fixture f;
  auto reg = std::make_shared<WatcherRegistry>();
  const auto t0 = Clock::now();
  auto busy = f.watcher();
  auto idle = f.watcher();
  auto busy_id = reg->add(busy, t0);
  auto idle_id = reg->add(idle, t0);
  EXPECT_EQ(reg->next_expiry(), t0 + kPollingIdleLimit);

  reg->use(busy_id, t0 + 9min);  // a GetWatcherEvents call
  EXPECT_EQ(reg->reap_idle(t0 + kPollingIdleLimit), 0u);  // exactly at the limit: kept
  EXPECT_EQ(reg->reap_idle(t0 + kPollingIdleLimit + 1ms), 1u);
  EXPECT_TRUE(idle->closed());
  EXPECT_FALSE(busy->closed());
  EXPECT_EQ(reg->use(idle_id, t0 + 11min), nullptr);
  EXPECT_EQ(reg->next_expiry(), t0 + 9min + kPollingIdleLimit);

  EXPECT_EQ(reg->reap_idle(t0 + 19min), 0u);
  EXPECT_EQ(reg->reap_idle(t0 + 20min), 1u);
  EXPECT_EQ(reg->size(), 0u);
  EXPECT_FALSE(reg->next_expiry());
}

TEST(WatcherRegistry, PollingCapRecordsATerminalError) {
  Fixture f;
  auto w = f.watcher();
  const int wd = w->watch_descriptor("");
  std::string buf;
  for (size_t i = 0; i <= kPollingMaxEvents; ++i) buf += create_record(wd, "f" + std::to_string(i));
  w->feed(buf.data(), buf.size());
  ASSERT_TRUE(w->error());
  EXPECT_EQ(*w->error(), "watcher error: event buffer overflow: more than 10000 undelivered events");
  // The error stays: every later GetWatcherEvents answers with it.
  w->take_all();
  EXPECT_TRUE(w->error());
}

TEST(WatcherRegistry, ReaperTimerRunsOnlyWhileWatchersExist) {
  Fixture f;
  auto reg = std::make_shared<WatcherRegistry>(std::chrono::milliseconds(30));
  auto w = f.watcher();
  reg->add(w, Clock::now());
  reg->ensure_reaper(f.io.get_executor());
  f.io.restart();
  f.io.run_for(std::chrono::milliseconds(200));
  EXPECT_EQ(reg->size(), 0u);
  EXPECT_TRUE(w->closed());
  // Nothing left to wait for: the io_context runs out of work.
  f.io.restart();
  EXPECT_LT(f.io.run_for(std::chrono::milliseconds(50)), 5u);
}
