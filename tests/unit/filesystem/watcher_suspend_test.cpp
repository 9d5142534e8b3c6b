// Watchers across a checkpoint: suspend() delivers what the kernel queued, then lets go of the
// inotify descriptor; resume() watches the root (and a recursive tree as it is by then) again;
// a root gone meanwhile fails the watcher with an error; suspend_all/resume_all reach every live
// watcher, and one started while suspended starts suspended. Every wait is bounded.
#include <gtest/gtest.h>

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <fstream>

#include "filesystem/watcher.hpp"
#include "temp_dir.hpp"

namespace net = boost::asio;
using namespace std::chrono_literals;
using cove::filesystem::EventType;
using cove::filesystem::Watcher;
using cove::filesystem::WatcherOptions;
using cove::system::UserDatabase;
using cove::test::TempDir;
using Clock = std::chrono::steady_clock;

namespace {

int inotify_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = d ? readdir(d) : nullptr) {
    char link[64];
    std::string path = std::string("/proc/self/fd/") + e->d_name;
    ssize_t len = readlink(path.c_str(), link, sizeof link - 1);
    if (len > 0 && std::string(link, static_cast<size_t>(len)) == "anon_inode:inotify") ++n;
  }
  if (d) closedir(d);
  return n;
}

void touch(const std::string& p) { std::ofstream(p) << "x"; }

std::string describe(const cove::filesystem::WatchEvent& ev) {
  switch (ev.type) {
    case EventType::create: return "CREATE " + ev.name;
    case EventType::write: return "WRITE " + ev.name;
    case EventType::remove: return "REMOVE " + ev.name;
    case EventType::rename: return "RENAME " + ev.name;
    case EventType::chmod: return "CHMOD " + ev.name;
  }
  return "?";
}

// The process-wide suspension must not outlive a test, whatever it asserts.
struct ResumeAllAtExit {
  ~ResumeAllAtExit() { Watcher::resume_all(); }
};

class Harness {
 public:
  std::shared_ptr<Watcher> start(const std::string& root, WatcherOptions options = {}) {
    std::string error;
    auto w = Watcher::start(io.get_executor(), root, options, users, error);
    if (!w) throw std::runtime_error("watcher: " + error);
    watchers.push_back(w);
    return w;
  }
  ~Harness() {
    for (auto& w : watchers) w->close();
    run_for(20ms);
  }
  void run_for(std::chrono::milliseconds d) {
    const auto deadline = Clock::now() + d;
    while (Clock::now() < deadline) {
      io.restart();
      io.run_for(5ms);
    }
  }
  // Every event popped until `last` is among them (at most 3 s), then 50 ms more for extras.
  std::vector<std::string> collect_until(Watcher& w, const std::string& last) {
    std::vector<std::string> out;
    const auto deadline = Clock::now() + 3s;
    auto drain = [&] {
      while (auto ev = w.pop()) out.push_back(describe(*ev));
      return std::find(out.begin(), out.end(), last) != out.end();
    };
    while (!drain() && Clock::now() < deadline) {
      io.restart();
      io.run_for(5ms);
    }
    run_for(50ms);
    drain();
    return out;
  }
  std::vector<std::string> take(Watcher& w) {
    std::vector<std::string> out;
    for (auto& ev : w.take_all()) out.push_back(describe(ev));
    return out;
  }

  net::io_context io;
  UserDatabase users;
  std::vector<std::shared_ptr<Watcher>> watchers;
};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST(WatcherSuspend, LetsGoOfTheDescriptorKeepsQueuedEventsAndWatchesAgain) {
  TempDir t;
  Harness h;
  const int before = inotify_fds();
  auto w = h.start(t.path());
  EXPECT_EQ(inotify_fds(), before + 1);

  touch(t / "before");  // queued in the kernel, not yet read
  w->suspend();
  EXPECT_TRUE(w->suspended());
  EXPECT_EQ(inotify_fds(), before);
  EXPECT_EQ(w->watch_count(), 0u);
  EXPECT_TRUE(contains(h.take(*w), "CREATE before"));

  touch(t / "during");  // nothing watches: lost, as documented
  h.run_for(30ms);
  EXPECT_EQ(w->pending(), 0u);

  w->resume();
  EXPECT_FALSE(w->suspended());
  EXPECT_FALSE(w->error());
  EXPECT_EQ(inotify_fds(), before + 1);
  touch(t / "after");
  auto events = h.collect_until(*w, "CREATE after");
  EXPECT_TRUE(contains(events, "CREATE after"));
  EXPECT_FALSE(contains(events, "CREATE during"));
}

TEST(WatcherSuspend, SuspendAndResumeAreIdempotent) {
  TempDir t;
  Harness h;
  const int before = inotify_fds();
  auto w = h.start(t.path());
  w->suspend();
  w->suspend();
  EXPECT_EQ(inotify_fds(), before);
  w->resume();
  w->resume();
  EXPECT_EQ(inotify_fds(), before + 1);
  // One read loop on the new descriptor: each event arrives once.
  touch(t / "f");
  auto events = h.collect_until(*w, "CREATE f");
  EXPECT_EQ(std::count(events.begin(), events.end(), "CREATE f"), 1);
}

TEST(WatcherSuspend, RecursiveResumeWatchesTheTreeAsItIsNow) {
  TempDir t;
  t.mkdir("old");
  Harness h;
  WatcherOptions recursive;
  recursive.recursive = true;
  auto w = h.start(t.path(), recursive);
  EXPECT_EQ(w->watch_count(), 2u);
  w->suspend();
  t.mkdir("new");
  t.mkdir("new/deeper");
  w->resume();
  EXPECT_EQ(w->watch_count(), 4u);  // root, old, new, new/deeper
  h.take(*w);                       // directories made in between are not reported as created
  touch(t / "new/deeper/f");
  touch(t / "old/g");
  auto events = h.collect_until(*w, "CREATE old/g");
  EXPECT_TRUE(contains(events, "CREATE new/deeper/f"));
  EXPECT_TRUE(contains(events, "CREATE old/g"));
}

TEST(WatcherSuspend, ARootGoneByResumeFailsTheWatcher) {
  TempDir t;
  t.mkdir("dir");
  Harness h;
  auto w = h.start(t / "dir");
  w->suspend();
  ASSERT_EQ(rmdir((t / "dir").c_str()), 0);
  w->resume();
  ASSERT_TRUE(w->error());
  EXPECT_EQ(*w->error(), "watcher error: adding path " + (t / "dir") +
                             " to watcher again after a pause: no such file or directory");
}

TEST(WatcherSuspend, AMovedRootIsNotWatchedAgain) {
  TempDir t;
  t.mkdir("dir");
  Harness h;
  auto w = h.start(t / "dir");
  ASSERT_EQ(rename((t / "dir").c_str(), (t / "moved").c_str()), 0);
  EXPECT_TRUE(contains(h.collect_until(*w, "RENAME ."), "RENAME ."));
  w->suspend();
  t.mkdir("dir");  // a different directory under the old name
  w->resume();
  EXPECT_FALSE(w->error());
  EXPECT_EQ(w->watch_count(), 0u);
  touch(t / "dir/x");
  h.run_for(50ms);
  EXPECT_EQ(w->pending(), 0u);
}

TEST(WatcherSuspend, SuspendAllReachesEveryWatcherAndNewOnesStartSuspended) {
  ResumeAllAtExit guard;
  TempDir t;
  t.mkdir("a");
  t.mkdir("b");
  t.mkdir("c");
  Harness h;
  const int before = inotify_fds();
  auto a = h.start(t / "a");
  auto b = h.start(t / "b");
  auto closed = h.start(t.path());
  closed->close();
  Watcher::suspend_all();
  EXPECT_TRUE(a->suspended());
  EXPECT_TRUE(b->suspended());
  auto c = h.start(t / "c");
  EXPECT_TRUE(c->suspended());
  EXPECT_EQ(inotify_fds(), before);

  Watcher::resume_all();
  EXPECT_EQ(inotify_fds(), before + 3);
  EXPECT_TRUE(closed->closed());
  for (auto& [w, dir] : {std::pair{a, "a"}, std::pair{b, "b"}, std::pair{c, "c"}}) {
    EXPECT_FALSE(w->suspended()) << dir;
    touch(t / (std::string(dir) + "/f"));
    EXPECT_TRUE(contains(h.collect_until(*w, "CREATE f"), "CREATE f")) << dir;
  }
  // Resumed for good: a watcher started now is live.
  auto d = h.start(t.path());
  EXPECT_FALSE(d->suspended());
}
