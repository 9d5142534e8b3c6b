#pragma once
// inotify watches behind WatchDir and the polling watchers (envd.md §5), on the agent's
// io_context. Events follow fsnotify's mapping and envd's order; names are relative to the
// watched directory. Recursive mode watches every subdirectory, adds new ones as they appear and
// scans each new one, reporting entries that were created before its watch existed.
#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "async/event.hpp"
#include "filesystem/entry_info.hpp"
#include "system/users.hpp"

namespace cove::filesystem {

namespace net = boost::asio;

// Values match filesystem.EventType.
enum class EventType { create = 1, write = 2, remove = 3, rename = 4, chmod = 5 };

// The inotify events a watch asks for: fsnotify's set.
uint32_t inotify_watch_mask();

// fsnotify's mapping of one inotify event (Create: IN_CREATE|IN_MOVED_TO, Write: IN_MODIFY,
// Remove: IN_DELETE|IN_DELETE_SELF, Rename: IN_MOVED_FROM|IN_MOVE_SELF, Chmod: IN_ATTRIB), in
// the order envd emits them: CREATE, RENAME, CHMOD, WRITE, REMOVE.
std::vector<EventType> map_inotify_mask(uint32_t mask);

struct WatchEvent {
  std::string name;  // relative to the watched directory; "." for the directory itself
  EventType type = EventType::create;
  std::optional<EntryInfo> entry;  // include_entry: on CREATE, WRITE and CHMOD when lstat works
};

struct WatcherOptions {
  bool recursive = false;
  bool include_entry = false;
  // Undelivered events beyond this end the watcher with an error instead of growing forever.
  size_t max_pending = 16384;
};

inline constexpr std::string_view kOverflowError = "watcher error: fsnotify: queue or buffer overflow";

class Watcher : public std::enable_shared_from_this<Watcher> {
 public:
  // Starts watching `root`, an existing directory (see check_watch_path). nullptr with `error`
  // set (envd's text) when inotify cannot be set up. `users` must outlive the watcher.
  static std::shared_ptr<Watcher> start(net::any_io_executor executor, std::string root, WatcherOptions options,
                                        const system::UserDatabase& users, std::string& error);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Undelivered events, oldest first.
  std::optional<WatchEvent> pop();
  std::vector<WatchEvent> take_all();
  size_t pending() const { return pending_.size(); }

  // Set once the watcher failed ("watcher error: ..."); no events are added after it.
  const std::optional<std::string>& error() const { return error_; }

  // Notified whenever events or an error arrive.
  async::Event& wake() { return wake_; }

  // Stops watching (idempotent). Undelivered events stay poppable.
  void close();
  bool closed() const { return closed_; }

  // Checkpoint support (system/quiesce.hpp). suspend() reads what the kernel has queued, then
  // closes the inotify descriptor (CRIU cannot reliably restore inotify watches on overlayfs)
  // but keeps the root and options; resume() watches the root (and, recursive, the tree as it
  // is now) again. Events between the two are lost: nothing watches in between, and a scan could
  // not tell which entries changed. A root gone by then fails the watcher with an error, so the
  // client learns of it. Both are idempotent and no-ops on a closed or failed watcher.
  void suspend();
  void resume();
  bool suspended() const { return suspended_; }
  // Every live watcher of the process: the RPC layer creates watchers without knowing about
  // checkpoints. Watchers started while suspended start suspended.
  static void suspend_all();
  static void resume_all();

  // Processes a buffer of raw inotify_event records: what the read loop does with each read;
  // tests feed synthetic records through it.
  void feed(const char* data, size_t size);

  // Watched directories and the descriptor watching one (-1 if none), for tests.
  size_t watch_count() const { return paths_by_wd_.size(); }
  int watch_descriptor(const std::string& rel) const {
    auto it = wd_by_path_.find(rel);
    return it == wd_by_path_.end() ? -1 : it->second;
  }

 private:
  Watcher(net::any_io_executor executor, int fd, std::string root, WatcherOptions options,
          const system::UserDatabase& users);
  static net::awaitable<void> read_loop(std::shared_ptr<Watcher> self, unsigned long generation);
  void start_reading();
  // Watches the root and, recursive, the tree below: "" or what went wrong (without the
  // "watcher error: " prefix), for the caller to word.
  std::string watch_root();

  void handle(int wd, uint32_t mask, uint32_t cookie, const std::string& name);
  void emit(const std::string& name, uint32_t mask);
  void push(WatchEvent ev);
  void fail(std::string message);
  std::string absolute(const std::string& rel) const;

  // Watches `top` and the directories below it; with `report_existing` every entry found below
  // `top` is reported as created.
  void add_tree(const std::string& top, bool report_existing);
  bool add_watch(const std::string& rel);
  void forget_wd(int wd);
  void remove_subtree(const std::string& rel);
  void rename_subtree(const std::string& from, const std::string& to);
  void forget_reported(const std::string& rel, bool subtree);

  net::posix::stream_descriptor stream_;
  int fd_;
  std::string root_;
  WatcherOptions options_;
  const system::UserDatabase& users_;
  async::Event wake_;

  int root_wd_ = -1;
  std::unordered_map<int, std::string> paths_by_wd_;  // relative path ("" = root)
  std::unordered_map<std::string, int> wd_by_path_;
  // Directory renames seen as IN_MOVED_FROM, waiting for their IN_MOVED_TO (by cookie).
  std::unordered_map<uint32_t, std::string> pending_moves_;
  // Entries a scan reported as created whose own IN_CREATE may still be queued: that one is
  // then a duplicate and dropped. Cleared when the entry is deleted or moved away.
  std::set<std::string> reported_;

  std::deque<WatchEvent> pending_;
  std::optional<std::string> error_;
  bool closed_ = false;
  bool suspended_ = false;
  // Whether the root was still watched when suspended (a moved root is not watched again).
  bool rewatch_root_ = false;
  // Each inotify descriptor gets a read loop of its own; a loop of an earlier one exits quietly.
  unsigned long generation_ = 0;
};

}  // namespace cove::filesystem
