#pragma once
// The polling watchers of CreateWatcher / GetWatcherEvents / RemoveWatcher. Unlike envd, whose
// list is unbounded and whose watchers leak when never removed, each watcher here buffers at
// most `max_events` (then reports an error) and is dropped after `idle` without a
// GetWatcherEvents call.
#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "async/event.hpp"
#include "filesystem/watcher.hpp"

namespace cove::filesystem {

using Clock = async::Clock;

inline constexpr size_t kPollingMaxEvents = 10000;
inline constexpr std::chrono::minutes kPollingIdleLimit{10};

// "w" + 20 characters of [a-z0-9] from the kernel's random source.
std::string generate_watcher_id();

class WatcherRegistry : public std::enable_shared_from_this<WatcherRegistry> {
 public:
  explicit WatcherRegistry(std::chrono::steady_clock::duration idle_limit = kPollingIdleLimit)
      : idle_limit_(idle_limit) {}
  ~WatcherRegistry();

  // Registers a running watcher and returns its new id.
  std::string add(std::shared_ptr<Watcher> watcher, Clock::time_point now);
  // The watcher, marking it used at `now`; nullptr for an unknown id.
  std::shared_ptr<Watcher> use(const std::string& id, Clock::time_point now);
  // Closes and forgets it; false for an unknown id.
  bool remove(const std::string& id);
  // Closes and forgets every watcher unused for longer than the idle limit; returns how many.
  size_t reap_idle(Clock::time_point now);
  // When the next watcher would become reapable, if there is any watcher.
  std::optional<Clock::time_point> next_expiry() const;
  size_t size() const { return watchers_.size(); }

  // Runs reap_idle on a timer while watchers exist (started on demand; stops when empty).
  void ensure_reaper(boost::asio::any_io_executor executor);

 private:
  struct Entry {
    std::shared_ptr<Watcher> watcher;
    Clock::time_point last_used;
  };
  std::chrono::steady_clock::duration idle_limit_;
  std::map<std::string, Entry> watchers_;
  bool reaper_running_ = false;
};

}  // namespace cove::filesystem
