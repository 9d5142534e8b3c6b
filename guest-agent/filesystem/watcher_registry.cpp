#include "filesystem/watcher_registry.hpp"

#include <sys/random.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <cerrno>
#include <stdexcept>

namespace cove::filesystem {
namespace {

namespace net = boost::asio;

constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
constexpr size_t kIdLength = 20;

void fill_random(unsigned char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(buf + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed");
    }
    got += static_cast<size_t>(r);
  }
}

}  // namespace

std::string generate_watcher_id() {
  std::string id = "w";
  std::array<unsigned char, 64> buf;
  while (id.size() < kIdLength + 1) {
    fill_random(buf.data(), buf.size());
    for (unsigned char b : buf) {
      // 252 = 7 * 36: rejecting the rest keeps every character equally likely.
      if (b >= 252) continue;
      id += kAlphabet[b % kAlphabet.size()];
      if (id.size() == kIdLength + 1) break;
    }
  }
  return id;
}

WatcherRegistry::~WatcherRegistry() {
  for (auto& [id, e] : watchers_) e.watcher->close();
}

std::string WatcherRegistry::add(std::shared_ptr<Watcher> watcher, Clock::time_point now) {
  std::string id;
  do {
    id = generate_watcher_id();
  } while (watchers_.count(id));
  watchers_.emplace(id, Entry{std::move(watcher), now});
  return id;
}

std::shared_ptr<Watcher> WatcherRegistry::use(const std::string& id, Clock::time_point now) {
  auto it = watchers_.find(id);
  if (it == watchers_.end()) return nullptr;
  it->second.last_used = now;
  return it->second.watcher;
}

bool WatcherRegistry::remove(const std::string& id) {
  auto it = watchers_.find(id);
  if (it == watchers_.end()) return false;
  it->second.watcher->close();
  watchers_.erase(it);
  return true;
}

size_t WatcherRegistry::reap_idle(Clock::time_point now) {
  size_t reaped = 0;
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (now - it->second.last_used > idle_limit_) {
      it->second.watcher->close();
      it = watchers_.erase(it);
      ++reaped;
    } else {
      ++it;
    }
  }
  return reaped;
}

std::optional<Clock::time_point> WatcherRegistry::next_expiry() const {
  std::optional<Clock::time_point> next;
  for (const auto& [id, e] : watchers_) {
    auto due = e.last_used + idle_limit_;
    if (!next || due < *next) next = due;
  }
  return next;
}

void WatcherRegistry::ensure_reaper(net::any_io_executor executor) {
  if (reaper_running_) return;
  reaper_running_ = true;
  // The loop holds only a weak reference: the registry's owner decides its lifetime.
  auto loop = [](std::weak_ptr<WatcherRegistry> weak, net::any_io_executor ex) -> net::awaitable<void> {
    net::steady_timer timer(ex);
    for (;;) {
      std::optional<Clock::time_point> due;
      {
        auto self = weak.lock();
        if (!self) co_return;
        self->reap_idle(Clock::now());
        due = self->next_expiry();
        if (!due) {
          self->reaper_running_ = false;
          co_return;
        }
      }
      // Just past the expiry, so the comparison in reap_idle is strictly greater.
      timer.expires_at(*due + std::chrono::milliseconds(1));
      boost::system::error_code ec;
      co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
  };
  net::co_spawn(executor, loop(weak_from_this(), executor), net::detached);
}

}  // namespace cove::filesystem
