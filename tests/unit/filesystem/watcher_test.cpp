// inotify watches: fsnotify's mask mapping in envd's order, real events flat and recursive
// (including the `mkdir -p a/b/c && touch a/b/c/f` race), duplicates from scans, renames, the
// entry on events, and overflow ending the watcher with an error. Every wait is bounded.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cstring>
#include <fstream>

#include "filesystem/watcher.hpp"
#include "temp_dir.hpp"

namespace net = boost::asio;
using namespace std::chrono_literals;
using cove::filesystem::EventType;
using cove::filesystem::kOverflowError;
using cove::filesystem::map_inotify_mask;
using cove::filesystem::WatchEvent;
using cove::filesystem::Watcher;
using cove::filesystem::WatcherOptions;
using cove::system::UserDatabase;
using cove::test::TempDir;
using Clock = std::chrono::steady_clock;

namespace {

const char* type_name(EventType t) {
  switch (t) {
    case EventType::create: return "CREATE";
    case EventType::write: return "WRITE";
    case EventType::remove: return "REMOVE";
    case EventType::rename: return "RENAME";
    case EventType::chmod: return "CHMOD";
  }
  return "?";
}

std::string describe(const WatchEvent& ev) { return std::string(type_name(ev.type)) + " " + ev.name; }

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
    run_for(20ms);  // let the read loops see the close
  }

  template <typename Pred>
  bool run_until(Pred done, std::chrono::milliseconds limit = 3s) {
    const auto deadline = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() >= deadline) return false;
      io.restart();
      io.run_for(5ms);
    }
    return true;
  }
  void run_for(std::chrono::milliseconds d) {
    const auto deadline = Clock::now() + d;
    while (Clock::now() < deadline) {
      io.restart();
      io.run_for(5ms);
    }
  }

  // Collects events until `last` has been seen (then a little longer, to catch extras).
  std::vector<std::string> collect_until(Watcher& w, const std::string& last, std::vector<WatchEvent>* raw = nullptr) {
    std::vector<std::string> out;
    bool seen = false;
    auto drain = [&] {
      while (auto ev = w.pop()) {
        out.push_back(describe(*ev));
        if (out.back() == last) seen = true;
        if (raw) raw->push_back(*ev);
      }
      return seen;
    };
    run_until(drain);
    run_for(50ms);
    drain();
    return out;
  }

  net::io_context io;
  UserDatabase users;
  std::vector<std::shared_ptr<Watcher>> watchers;
};

void touch(const std::string& p, const std::string& content = "") { std::ofstream(p) << content; }

// One synthetic inotify record.
std::string record(int wd, uint32_t mask, uint32_t cookie, const std::string& name) {
  inotify_event ev{};
  ev.wd = wd;
  ev.mask = mask;
  ev.cookie = cookie;
  ev.len = name.empty() ? 0 : static_cast<uint32_t>((name.size() + 16) & ~size_t{15});
  std::string out(reinterpret_cast<const char*>(&ev), sizeof ev);
  std::string padded = name;
  padded.resize(ev.len, '\0');
  return out + padded;
}

}  // namespace

TEST(WatchEventMapping, FsnotifyOpsInEnvdOrder) {
  using V = std::vector<EventType>;
  EXPECT_EQ(map_inotify_mask(IN_CREATE), V{EventType::create});
  EXPECT_EQ(map_inotify_mask(IN_CREATE | IN_ISDIR), V{EventType::create});
  EXPECT_EQ(map_inotify_mask(IN_MOVED_TO), V{EventType::create});
  EXPECT_EQ(map_inotify_mask(IN_MODIFY), V{EventType::write});
  EXPECT_EQ(map_inotify_mask(IN_DELETE), V{EventType::remove});
  EXPECT_EQ(map_inotify_mask(IN_DELETE_SELF), V{EventType::remove});
  EXPECT_EQ(map_inotify_mask(IN_MOVED_FROM), V{EventType::rename});
  EXPECT_EQ(map_inotify_mask(IN_MOVE_SELF), V{EventType::rename});
  EXPECT_EQ(map_inotify_mask(IN_ATTRIB), V{EventType::chmod});
  // Not part of fsnotify's default ops.
  EXPECT_EQ(map_inotify_mask(IN_CLOSE_WRITE), V{});
  EXPECT_EQ(map_inotify_mask(IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE), V{});
  EXPECT_EQ(map_inotify_mask(IN_IGNORED), V{});
  // Several at once come out CREATE, RENAME, CHMOD, WRITE, REMOVE.
  EXPECT_EQ(map_inotify_mask(IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_CREATE),
            (V{EventType::create, EventType::rename, EventType::chmod, EventType::write, EventType::remove}));
  EXPECT_EQ(map_inotify_mask(IN_DELETE_SELF | IN_MODIFY), (V{EventType::write, EventType::remove}));
  EXPECT_EQ(map_inotify_mask(IN_ATTRIB | IN_MOVE_SELF), (V{EventType::rename, EventType::chmod}));
}

TEST(Watcher, FlatEventsWithRelativeNames) {
  TempDir t;
  t.mkdir("sub");
  Harness h;
  auto w = h.start(t.path());
  touch(t / "f", "data");
  chmod((t / "f").c_str(), 0600);
  rename((t / "f").c_str(), (t / "g").c_str());
  touch(t / "sub/ignored");  // not recursive: nothing from inside sub
  unlink((t / "g").c_str());
  auto got = h.collect_until(*w, "REMOVE g");
  EXPECT_EQ(got, (std::vector<std::string>{"CREATE f", "WRITE f", "CHMOD f", "RENAME f", "CREATE g", "REMOVE g"}));
  EXPECT_EQ(w->watch_count(), 1u);
  EXPECT_FALSE(w->error());
}

TEST(Watcher, RecursiveSeesFilesCreatedBeforeTheNewDirectoryWasWatched) {
  TempDir t;
  Harness h;
  auto w = h.start(t.path(), WatcherOptions{.recursive = true});
  // All of this happens before the watcher reads a single event: a/b/c exist (unwatched) by
  // the time IN_CREATE for "a" is handled, so only a scan can report them.
  ASSERT_EQ(mkdir((t / "a").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((t / "a/b").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((t / "a/b/c").c_str(), 0755), 0);
  int fd = open((t / "a/b/c/f").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  auto got = h.collect_until(*w, "CREATE a/b/c/f");
  EXPECT_EQ(got, (std::vector<std::string>{"CREATE a", "CREATE a/b", "CREATE a/b/c", "CREATE a/b/c/f"}));
  EXPECT_EQ(w->watch_count(), 4u);

  // The new directories are watched from now on.
  touch(t / "a/b/c/g");
  EXPECT_EQ(h.collect_until(*w, "CREATE a/b/c/g"), (std::vector<std::string>{"CREATE a/b/c/g"}));
}

TEST(Watcher, RecursiveWatchesExistingSubdirectories) {
  TempDir t;
  t.mkdir("x");
  t.mkdir("x/y");
  Harness h;
  auto w = h.start(t.path(), WatcherOptions{.recursive = true});
  EXPECT_EQ(w->watch_count(), 3u);
  touch(t / "x/y/z", "1");
  EXPECT_EQ(h.collect_until(*w, "WRITE x/y/z"), (std::vector<std::string>{"CREATE x/y/z", "WRITE x/y/z"}));
}

TEST(Watcher, ScanDuplicatesAreDroppedButLaterRecreationsAreNot) {
  TempDir t;
  Harness h;
  auto w = h.start(t.path(), WatcherOptions{.recursive = true});
  ASSERT_EQ(mkdir((t / "a").c_str(), 0755), 0);
  touch(t / "a/x");
  EXPECT_EQ(h.collect_until(*w, "CREATE a/x"), (std::vector<std::string>{"CREATE a", "CREATE a/x"}));
  const int wd = w->watch_descriptor("a");
  ASSERT_GT(wd, 0);
  // The kernel's own IN_CREATE for a/x, had a/x been created between watch and scan: dropped.
  std::string dup = record(wd, IN_CREATE, 0, "x");
  w->feed(dup.data(), dup.size());
  EXPECT_EQ(w->pending(), 0u);
  // After a removal the name is fresh again.
  std::string again = record(wd, IN_DELETE, 0, "x") + record(wd, IN_CREATE, 0, "x");
  w->feed(again.data(), again.size());
  std::vector<std::string> got;
  while (auto ev = w->pop()) got.push_back(describe(*ev));
  EXPECT_EQ(got, (std::vector<std::string>{"REMOVE a/x", "CREATE a/x"}));

  // A rename over a name a scan reported is a new entry: reported.
  ASSERT_EQ(mkdir((t / "c").c_str(), 0755), 0);
  touch(t / "c/z");
  EXPECT_EQ(h.collect_until(*w, "CREATE c/z"), (std::vector<std::string>{"CREATE c", "CREATE c/z"}));
  const int wd_c = w->watch_descriptor("c");
  ASSERT_GT(wd_c, 0);
  std::string over = record(wd_c, IN_MOVED_TO, 7, "z");
  w->feed(over.data(), over.size());
  ASSERT_EQ(w->pending(), 1u);
  EXPECT_EQ(describe(*w->pop()), "CREATE c/z");
}

TEST(Watcher, DirectoryRenamedBeforeItsWatchIsStillWatched) {
  TempDir t;
  Harness h;
  auto w = h.start(t.path(), WatcherOptions{.recursive = true});
  ASSERT_EQ(mkdir((t / "a").c_str(), 0755), 0);
  touch(t / "a/inside");
  ASSERT_EQ(rename((t / "a").c_str(), (t / "b").c_str()), 0);  // before any event is read
  EXPECT_EQ(h.collect_until(*w, "CREATE b/inside"),
            (std::vector<std::string>{"CREATE a", "RENAME a", "CREATE b", "CREATE b/inside"}));
  touch(t / "b/later");
  EXPECT_EQ(h.collect_until(*w, "CREATE b/later"), (std::vector<std::string>{"CREATE b/later"}));
}

TEST(Watcher, RecursiveRenamesKeepPathsAndMovingOutStopsWatching) {
  TempDir t;
  TempDir outside;
  t.mkdir("a");
  t.mkdir("a/b");
  Harness h;
  auto w = h.start(t.path(), WatcherOptions{.recursive = true});
  ASSERT_EQ(rename((t / "a/b").c_str(), (t / "a/c").c_str()), 0);
  touch(t / "a/c/f");
  EXPECT_EQ(h.collect_until(*w, "CREATE a/c/f"),
            (std::vector<std::string>{"RENAME a/b", "CREATE a/c", "CREATE a/c/f"}));

  ASSERT_EQ(rename((t / "a/c").c_str(), (outside / "c").c_str()), 0);
  EXPECT_EQ(h.collect_until(*w, "RENAME a/c"), (std::vector<std::string>{"RENAME a/c"}));
  touch(outside / "c/g");  // no longer in the tree: no event
  h.run_for(100ms);
  EXPECT_EQ(w->pending(), 0u);
  EXPECT_EQ(w->watch_count(), 2u);  // root and a
}

TEST(Watcher, IncludeEntryOnlyOnCreateWriteChmod) {
  TempDir t;
  Harness h;
  auto w = h.start(t.path(), WatcherOptions{.include_entry = true});
  touch(t / "f", "abc");
  chmod((t / "f").c_str(), 0600);
  rename((t / "f").c_str(), (t / "g").c_str());
  unlink((t / "g").c_str());
  std::vector<WatchEvent> raw;
  auto got = h.collect_until(*w, "REMOVE g", &raw);
  ASSERT_EQ(got, (std::vector<std::string>{"CREATE f", "WRITE f", "CHMOD f", "RENAME f", "CREATE g", "REMOVE g"}));
  // The files are gone by the time the events are handled: an entry is attached only when
  // lstat works, and never to RENAME or REMOVE. A file that stays gets its entry:
  for (const auto& ev : raw) {
    if (ev.type == EventType::rename || ev.type == EventType::remove) {
      EXPECT_FALSE(ev.entry) << describe(ev);
    }
  }
  touch(t / "live", "12");
  std::vector<WatchEvent> live;
  h.collect_until(*w, "WRITE live", &live);
  ASSERT_FALSE(live.empty());
  ASSERT_TRUE(live[0].entry.has_value());
  EXPECT_EQ(live[0].entry->name, "live");
  EXPECT_EQ(live[0].entry->path, t / "live");
}

TEST(Watcher, RootSelfEventsUseDot) {
  TempDir t;
  t.mkdir("w");
  Harness h;
  auto w = h.start(t / "w");
  chmod((t / "w").c_str(), 0700);
  rmdir((t / "w").c_str());
  EXPECT_EQ(h.collect_until(*w, "REMOVE ."), (std::vector<std::string>{"CHMOD .", "REMOVE ."}));
  EXPECT_FALSE(w->error());
}

TEST(Watcher, QueueOverflowEndsWithAnError) {
  TempDir t;
  Harness h;
  auto w = h.start(t.path());
  const int wd = w->watch_descriptor("");
  std::string buf = record(wd, IN_CREATE, 0, "before") + record(-1, IN_Q_OVERFLOW, 0, "") +
                    record(wd, IN_CREATE, 0, "after");
  w->feed(buf.data(), buf.size());
  ASSERT_TRUE(w->error());
  EXPECT_EQ(*w->error(), kOverflowError);
  // What came before the overflow is still delivered; nothing after it.
  auto ev = w->pop();
  ASSERT_TRUE(ev);
  EXPECT_EQ(describe(*ev), "CREATE before");
  EXPECT_FALSE(w->pop());
}

TEST(Watcher, RealKernelQueueOverflow) {
  std::ifstream limit_file("/proc/sys/fs/inotify/max_queued_events");
  size_t limit = 0;
  if (!(limit_file >> limit) || limit > 50000) GTEST_SKIP() << "queue limit too large to overflow quickly";
  TempDir t;
  Harness h;
  auto w = h.start(t.path(), WatcherOptions{.max_pending = limit * 4});
  for (size_t i = 0; i < limit + 100; ++i) {
    int fd = open((t / ("f" + std::to_string(i))).c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  ASSERT_TRUE(h.run_until([&] { return w->error().has_value(); }));
  EXPECT_EQ(*w->error(), kOverflowError);
}

TEST(Watcher, PendingCapEndsWithAnError) {
  TempDir t;
  Harness h;
  auto w = h.start(t.path(), WatcherOptions{.max_pending = 5});
  for (int i = 0; i < 8; ++i) touch(t / ("f" + std::to_string(i)));
  ASSERT_TRUE(h.run_until([&] { return w->error().has_value(); }));
  EXPECT_EQ(*w->error(), "watcher error: event buffer overflow: more than 5 undelivered events");
  EXPECT_EQ(w->pending(), 5u);
}

TEST(Watcher, CloseStopsEvents) {
  TempDir t;
  Harness h;
  auto w = h.start(t.path());
  w->close();
  touch(t / "f");
  h.run_for(50ms);
  EXPECT_EQ(w->pending(), 0u);
  EXPECT_TRUE(w->closed());
}

TEST(Watcher, StartFailsOnMissingPath) {
  TempDir t;
  net::io_context io;
  UserDatabase users;
  std::string error;
  auto w = Watcher::start(io.get_executor(), t / "nope", {}, users, error);
  EXPECT_EQ(w, nullptr);
  EXPECT_EQ(error, "error adding path " + t / "nope" + " to watcher: no such file or directory");
}
