#include "process/registry.hpp"

#include <sys/wait.h>

namespace cove::process {

Registry::Registry(net::any_io_executor executor) : Registry(executor, Limits{}) {}

Registry::Registry(net::any_io_executor executor, Limits limits)
    : executor_(executor), limits_(limits) {}

void Registry::start_reaper() {
  sigchld_ = std::make_unique<net::signal_set>(executor_, SIGCHLD);
  sweeper_ = std::make_unique<net::steady_timer>(executor_);
  wait_for_sigchld();
  reap();  // children that exited before the handler existed
}

void Registry::wait_for_sigchld() {
  sigchld_->async_wait([this](boost::system::error_code ec, int) {
    if (ec) return;
    reap();
    wait_for_sigchld();
  });
}

void Registry::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    auto it = live_.find(pid);
    if (it != live_.end()) {
      auto process = it->second;  // on_exit may retire it from live_
      process->on_exit(status);
    } else if (auto w = watched_.find(pid); w != watched_.end()) {
      auto on_exit = std::move(w->second);
      watched_.erase(w);
      on_exit(status);
    }
    // Anything else is an orphan adopted by PID 1: reaping it is all there is to do.
  }
}

std::optional<Started> Registry::start(StartRequest request, int* error) {
  auto hub = std::make_shared<OutputHub>(executor_, limits_.replay_bytes, limits_.subscriber_bytes);
  // Subscribe before the child exists so not a byte of early output can be missed.
  auto subscription = hub->subscribe(false);
  SpawnedChild child = spawn_child(request.spawn, error);
  if (child.pid < 0) return std::nullopt;
  auto process = std::make_shared<Process>(executor_, child.pid, child, std::move(request.config),
                                           std::move(request.tag), hub);
  process->on_finished = [this](Process& p) { retire(p); };
  live_[child.pid] = process;
  if (request.lifetime && request.lifetime->count() > 0) {
    process->kill_at(std::chrono::steady_clock::now() + *request.lifetime);
  }
  process->start_readers();
  return Started{process, std::move(subscription)};
}

void Registry::retire(Process& process) {
  auto it = live_.find(process.pid());
  if (it == live_.end() || it->second.get() != &process) return;
  auto now = std::chrono::steady_clock::now();
  exited_.emplace(process.pid(), Exited{it->second, now + limits_.exited_retention});
  live_.erase(it);
  // Sweep expired entries lazily here and on a timer.
  for (auto e = exited_.begin(); e != exited_.end();) {
    e = e->second.expires <= now ? exited_.erase(e) : std::next(e);
  }
  sweeper_->expires_after(limits_.exited_retention + std::chrono::seconds(1));
  sweeper_->async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    auto now = std::chrono::steady_clock::now();
    for (auto e = exited_.begin(); e != exited_.end();) {
      e = e->second.expires <= now ? exited_.erase(e) : std::next(e);
    }
  });
}

std::shared_ptr<Process> Registry::find_live(const Selector& selector) const {
  if (selector.pid) {
    auto it = live_.find(static_cast<pid_t>(*selector.pid));
    return it == live_.end() ? nullptr : it->second;
  }
  if (selector.tag) {
    // A full scan: envd stops at the first tagged process and can miss (envd.md §7).
    for (const auto& [pid, p] : live_) {
      if (p->tag() && *p->tag() == *selector.tag) return p;
    }
  }
  return nullptr;
}

std::shared_ptr<Process> Registry::find_any(const Selector& selector) const {
  if (auto p = find_live(selector)) return p;
  auto now = std::chrono::steady_clock::now();
  std::shared_ptr<Process> newest;
  std::chrono::steady_clock::time_point newest_expiry{};
  for (const auto& [pid, e] : exited_) {
    if (e.expires <= now) continue;
    bool match = selector.pid ? static_cast<uint32_t>(pid) == *selector.pid
                              : (selector.tag && e.process->tag() && *e.process->tag() == *selector.tag);
    if (match && e.expires >= newest_expiry) {
      newest = e.process;
      newest_expiry = e.expires;
    }
  }
  return newest;
}

void Registry::watch_exit(pid_t pid, std::function<void(int)> on_exit) {
  watched_[pid] = std::move(on_exit);
}

std::vector<std::shared_ptr<Process>> Registry::list_live() const {
  std::vector<std::shared_ptr<Process>> out;
  out.reserve(live_.size());
  for (const auto& [pid, p] : live_) out.push_back(p);
  return out;
}

}  // namespace cove::process
