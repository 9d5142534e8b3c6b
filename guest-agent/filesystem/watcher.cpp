#include "filesystem/watcher.hpp"

#include <dirent.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "system/go_errors.hpp"

namespace cove::filesystem {
namespace {

constexpr size_t kReadBuffer = 64 * 1024;
// Bound on the duplicate-suppression set; past it a duplicate CREATE is possible, never a loss.
constexpr size_t kMaxReported = 100000;

std::string join_rel(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

bool under(const std::string& path, const std::string& top) {
  return path == top || (path.size() > top.size() && path.compare(0, top.size(), top) == 0 && path[top.size()] == '/');
}

bool wants_entry(EventType t) {
  return t == EventType::create || t == EventType::write || t == EventType::chmod;
}

}  // namespace

uint32_t inotify_watch_mask() {
  return IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_MOVE_SELF | IN_DELETE | IN_DELETE_SELF;
}

std::vector<EventType> map_inotify_mask(uint32_t mask) {
  std::vector<EventType> out;
  if (mask & (IN_CREATE | IN_MOVED_TO)) out.push_back(EventType::create);
  if (mask & (IN_MOVED_FROM | IN_MOVE_SELF)) out.push_back(EventType::rename);
  if (mask & IN_ATTRIB) out.push_back(EventType::chmod);
  if (mask & IN_MODIFY) out.push_back(EventType::write);
  if (mask & (IN_DELETE | IN_DELETE_SELF)) out.push_back(EventType::remove);
  return out;
}

namespace {

// Every live watcher, for suspend_all/resume_all.
struct Roster {
  std::mutex mu;
  std::set<Watcher*> live;
  bool suspended = false;
};

Roster& roster() {
  static Roster r;
  return r;
}

// The live watchers, held so none goes away while the caller works on them.
std::vector<std::shared_ptr<Watcher>> live_watchers(bool suspended) {
  auto& r = roster();
  std::lock_guard<std::mutex> lock(r.mu);
  r.suspended = suspended;
  std::vector<std::shared_ptr<Watcher>> out;
  for (auto* w : r.live) {
    if (auto held = w->weak_from_this().lock()) out.push_back(std::move(held));
  }
  return out;
}

}  // namespace

Watcher::Watcher(net::any_io_executor executor, int fd, std::string root, WatcherOptions options,
                 const system::UserDatabase& users)
    : stream_(executor, fd),
      fd_(fd),
      root_(std::move(root)),
      options_(options),
      users_(users),
      wake_(executor) {
  auto& r = roster();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live.insert(this);
}

Watcher::~Watcher() {
  close();
  auto& r = roster();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live.erase(this);
}

std::shared_ptr<Watcher> Watcher::start(net::any_io_executor executor, std::string root, WatcherOptions options,
                                        const system::UserDatabase& users, std::string& error) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    error = "error creating watcher: " + system::errno_text(errno);
    return nullptr;
  }
  std::shared_ptr<Watcher> w(new Watcher(executor, fd, std::move(root), options, users));
  if (std::string problem = w->watch_root(); !problem.empty()) {
    error = "error adding path " + w->root_ + " to watcher: " + problem;
    return nullptr;
  }
  w->start_reading();
  bool suspended = false;
  {
    auto& r = roster();
    std::lock_guard<std::mutex> lock(r.mu);
    suspended = r.suspended;
  }
  if (suspended) w->suspend();
  return w;
}

std::string Watcher::watch_root() {
  // The root may itself be a symlink to a directory: follow it (below the root nothing is).
  int wd = inotify_add_watch(fd_, root_.c_str(), inotify_watch_mask() | IN_ONLYDIR);
  if (wd < 0) return system::errno_text(errno);
  root_wd_ = wd;
  paths_by_wd_[wd] = "";
  wd_by_path_[""] = wd;
  if (options_.recursive) {
    add_tree("", false);
    if (error_) {
      constexpr std::string_view kPrefix = "watcher error: ";
      std::string detail = *error_;
      if (detail.rfind(kPrefix, 0) == 0) detail.erase(0, kPrefix.size());
      return detail;
    }
  }
  return "";
}

void Watcher::start_reading() {
  net::co_spawn(stream_.get_executor(), read_loop(shared_from_this(), ++generation_), net::detached);
}

net::awaitable<void> Watcher::read_loop(std::shared_ptr<Watcher> self, unsigned long generation) {
  // inotify reads return whole records; the buffer holds thousands of them.
  std::vector<char> buf(kReadBuffer);
  auto current = [&] { return self->generation_ == generation && !self->closed_ && !self->error_; };
  while (current()) {
    boost::system::error_code ec;
    size_t n = co_await self->stream_.async_read_some(net::buffer(buf), net::redirect_error(net::use_awaitable, ec));
    if (!current()) break;  // closed, failed or suspended meanwhile
    if (ec) {
      self->fail("watcher error: " + ec.message());
      break;
    }
    self->feed(buf.data(), n);
  }
}

void Watcher::suspend() {
  if (suspended_ || closed_ || error_) return;
  // What the kernel queued before the freeze is still delivered.
  std::vector<char> buf(kReadBuffer);
  for (;;) {
    ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n <= 0) break;  // EAGAIN: the queue is empty
    feed(buf.data(), static_cast<size_t>(n));
    if (error_) return;  // overflowed: the watcher has failed and let go of its descriptor
  }
  rewatch_root_ = wd_by_path_.count("") > 0;
  suspended_ = true;
  ++generation_;
  boost::system::error_code ignored;
  stream_.close(ignored);  // drops every watch and cancels the pending read
  fd_ = -1;
  paths_by_wd_.clear();
  wd_by_path_.clear();
  pending_moves_.clear();
  reported_.clear();
  root_wd_ = -1;
}

void Watcher::resume() {
  if (!suspended_) return;
  suspended_ = false;
  if (closed_ || error_) return;
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    fail("watcher error: creating watcher again after a pause: " + system::errno_text(errno));
    return;
  }
  boost::system::error_code ec;
  stream_.assign(fd, ec);
  if (ec) {
    ::close(fd);
    fail("watcher error: creating watcher again after a pause: " + ec.message());
    return;
  }
  fd_ = fd;
  if (rewatch_root_) {
    if (std::string problem = watch_root(); !problem.empty()) {
      // error_ is already set when the tree below failed; the first error stands.
      fail("watcher error: adding path " + root_ + " to watcher again after a pause: " + problem);
      return;
    }
  }
  start_reading();
}

void Watcher::suspend_all() {
  for (auto& w : live_watchers(true)) w->suspend();
}

void Watcher::resume_all() {
  for (auto& w : live_watchers(false)) w->resume();
}

void Watcher::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  stream_.close(ignored);  // drops every watch and cancels the pending read
  wake_.notify_all();
}

std::optional<WatchEvent> Watcher::pop() {
  if (pending_.empty()) return std::nullopt;
  WatchEvent ev = std::move(pending_.front());
  pending_.pop_front();
  return ev;
}

std::vector<WatchEvent> Watcher::take_all() {
  std::vector<WatchEvent> out(std::make_move_iterator(pending_.begin()), std::make_move_iterator(pending_.end()));
  pending_.clear();
  return out;
}

void Watcher::fail(std::string message) {
  if (error_) return;
  error_ = std::move(message);
  boost::system::error_code ignored;
  stream_.close(ignored);
  wake_.notify_all();
}

std::string Watcher::absolute(const std::string& rel) const {
  if (rel.empty() || rel == ".") return root_;
  if (!root_.empty() && root_.back() == '/') return root_ + rel;
  return root_ + "/" + rel;
}

void Watcher::feed(const char* data, size_t size) {
  size_t off = 0;
  const size_t before = pending_.size();
  while (off + sizeof(inotify_event) <= size && !error_ && !closed_) {
    inotify_event ev;
    std::memcpy(&ev, data + off, sizeof ev);
    const size_t record = sizeof(inotify_event) + ev.len;
    if (off + record > size) break;
    const char* name = data + off + sizeof(inotify_event);
    handle(ev.wd, ev.mask, ev.cookie, std::string(name, strnlen(name, ev.len)));
    off += record;
  }
  if (pending_.size() != before) wake_.notify_all();
}

void Watcher::handle(int wd, uint32_t mask, uint32_t cookie, const std::string& name) {
  if (mask & IN_Q_OVERFLOW) {
    // Events were lost: say so rather than carry on with a silent gap.
    fail(std::string(kOverflowError));
    return;
  }
  auto it = paths_by_wd_.find(wd);
  if (mask & IN_IGNORED) {
    if (it != paths_by_wd_.end()) forget_wd(wd);
    return;
  }
  if (it == paths_by_wd_.end()) return;  // a watch we already dropped
  const std::string dir = it->second;

  if (name.empty()) {
    // An event about a watched directory itself.
    if (wd != root_wd_) {
      // Its parent's watch reports it by name; here only the bookkeeping of a directory moved
      // out of the tree (IN_MOVED_FROM without a matching IN_MOVED_TO).
      if (mask & IN_MOVE_SELF) {
        for (auto p = pending_moves_.begin(); p != pending_moves_.end(); ++p) {
          if (p->second == dir) {
            pending_moves_.erase(p);
            remove_subtree(dir);
            break;
          }
        }
      }
      return;
    }
    emit(".", mask);
    if (mask & IN_MOVE_SELF) {
      // As fsnotify: the tree's paths are stale once the root moved, so stop watching it.
      remove_subtree("");
    }
    return;
  }

  const std::string rel = join_rel(dir, name);
  const bool is_dir = mask & IN_ISDIR;
  // An IN_CREATE for a name a scan reported, with no removal in between, is the same entry:
  // the scan already reported (and, for a directory, watched) it. Only IN_CREATE is matched: a
  // rename over an existing name (IN_MOVED_TO) is a new entry and must not be lost.
  if ((mask & IN_CREATE) && reported_.erase(rel) > 0) mask &= ~static_cast<uint32_t>(IN_CREATE);
  if (mask & (IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) forget_reported(rel, is_dir);
  emit(rel, mask);

  if (!options_.recursive || !is_dir) return;
  if (mask & IN_CREATE) {
    add_tree(rel, true);
  } else if (mask & IN_DELETE) {
    // Its watches die with it; forget them now so a new directory of the same name, created
    // before the kernel's IN_IGNORED is read, is not mistaken for the old one.
    remove_subtree(rel);
  } else if (mask & IN_MOVED_TO) {
    auto p = pending_moves_.find(cookie);
    if (p != pending_moves_.end()) {
      rename_subtree(p->second, rel);
      pending_moves_.erase(p);
      // Renamed before its watch could be added (e.g. mkdir then mv at once): watch it now
      // and report what it already holds, whose events were never seen.
      if (!wd_by_path_.count(rel)) add_tree(rel, true);
    } else {
      add_tree(rel, false);  // moved in from outside: its contents are not new
    }
  } else if (mask & IN_MOVED_FROM) {
    if (pending_moves_.size() > 1024) pending_moves_.clear();  // unmatched leftovers
    pending_moves_[cookie] = rel;
  }
}

void Watcher::emit(const std::string& name, uint32_t mask) {
  std::optional<EntryInfo> entry;
  bool entry_loaded = false;
  for (EventType type : map_inotify_mask(mask)) {
    WatchEvent ev;
    ev.name = name;
    ev.type = type;
    if (options_.include_entry && wants_entry(type)) {
      if (!entry_loaded) {
        int err = 0;
        entry = entry_info(absolute(name), users_, err);
        entry_loaded = true;
      }
      ev.entry = entry;
    }
    push(std::move(ev));
    if (error_) return;
  }
}

void Watcher::push(WatchEvent ev) {
  if (error_) return;
  if (pending_.size() >= options_.max_pending) {
    fail("watcher error: event buffer overflow: more than " + std::to_string(options_.max_pending) +
         " undelivered events");
    return;
  }
  pending_.push_back(std::move(ev));
}

bool Watcher::add_watch(const std::string& rel) {
  if (!stream_.is_open()) return false;
  int wd = inotify_add_watch(fd_, absolute(rel).c_str(),
                             inotify_watch_mask() | IN_ONLYDIR | IN_DONT_FOLLOW);
  if (wd < 0) {
    // Gone or replaced by a non-directory before we got to it: nothing to watch. An unreadable
    // directory cannot be watched either; the rest of the tree still is.
    if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == EPERM) return false;
    fail("watcher error: adding watch for " + (rel.empty() ? std::string(".") : rel) + ": " + system::errno_text(errno));
    return false;
  }
  auto old = paths_by_wd_.find(wd);
  if (old != paths_by_wd_.end() && old->second != rel) wd_by_path_.erase(old->second);
  paths_by_wd_[wd] = rel;
  wd_by_path_[rel] = wd;
  return true;
}

void Watcher::add_tree(const std::string& top, bool report_existing) {
  // Depth first with each directory's entries in lexical order, so reported entries come out
  // parent before child. The watch goes on before the scan: an entry created in between shows
  // up twice (scan, then its own event), and `reported_` drops the second.
  struct Item {
    std::string rel;
    bool is_dir;
    bool report;
  };
  std::vector<Item> stack{{top, true, false}};
  while (!stack.empty() && !error_ && !closed_) {
    Item item = std::move(stack.back());
    stack.pop_back();
    if (item.report) {
      if (reported_.size() >= kMaxReported) reported_.clear();
      reported_.insert(item.rel);
      emit(item.rel, IN_CREATE);
    }
    if (!item.is_dir) continue;
    if (!item.rel.empty() && !add_watch(item.rel)) continue;  // "" is the root, watched already
    const std::string abs = absolute(item.rel);
    DIR* d = opendir(abs.c_str());
    if (d == nullptr) continue;  // vanished or unreadable: its events simply never come
    std::vector<std::pair<std::string, bool>> children;
    while (dirent* e = readdir(d)) {
      std::string_view n(e->d_name);
      if (n == "." || n == "..") continue;
      std::string child = join_rel(item.rel, std::string(n));
      bool child_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st{};
        child_dir = lstat(absolute(child).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      }
      children.emplace_back(std::move(child), child_dir);
    }
    closedir(d);
    std::sort(children.begin(), children.end());
    for (auto c = children.rbegin(); c != children.rend(); ++c) {
      if (!report_existing && !c->second) continue;
      stack.push_back({c->first, c->second, report_existing});
    }
  }
}

void Watcher::forget_wd(int wd) {
  auto it = paths_by_wd_.find(wd);
  if (it == paths_by_wd_.end()) return;
  auto back = wd_by_path_.find(it->second);
  if (back != wd_by_path_.end() && back->second == wd) wd_by_path_.erase(back);
  paths_by_wd_.erase(it);
}

void Watcher::remove_subtree(const std::string& rel) {
  std::vector<int> doomed;
  for (const auto& [wd, path] : paths_by_wd_) {
    if (rel.empty() || under(path, rel)) doomed.push_back(wd);
  }
  for (int wd : doomed) {
    if (stream_.is_open()) inotify_rm_watch(fd_, wd);
    forget_wd(wd);
  }
}

void Watcher::rename_subtree(const std::string& from, const std::string& to) {
  std::vector<std::pair<int, std::string>> moved;
  for (const auto& [wd, path] : paths_by_wd_) {
    if (under(path, from)) moved.emplace_back(wd, to + path.substr(from.size()));
  }
  for (const auto& [wd, path] : moved) {
    forget_wd(wd);
    paths_by_wd_[wd] = path;
    wd_by_path_[path] = wd;
  }
}

void Watcher::forget_reported(const std::string& rel, bool subtree) {
  reported_.erase(rel);
  if (!subtree) return;
  // Everything under "rel/": '0' is the character after '/'.
  reported_.erase(reported_.lower_bound(rel + "/"), reported_.lower_bound(rel + "0"));
}

}  // namespace cove::filesystem
