#pragma once
// All processes the agent started: live ones by pid, and exited ones kept for 30 s so a late
// Connect still gets the exit (and any output nobody read). Reaps every child, including
// orphans re-parented to the agent when it runs as PID 1.
#include <boost/asio/signal_set.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "process/process.hpp"

namespace cove::process {

struct StartRequest {
  SpawnSpec spawn;
  RequestedConfig config;
  std::optional<std::string> tag;
  std::optional<std::chrono::milliseconds> lifetime;  // SIGKILL after this long
};

struct Started {
  std::shared_ptr<Process> process;
  std::unique_ptr<Subscription> subscription;  // attached before the child ran
};

struct Selector {
  std::optional<uint32_t> pid;
  std::optional<std::string> tag;
};

class Registry {
 public:
  struct Limits {
    size_t replay_bytes = 1 << 20;      // per process, output kept while nobody listens
    size_t subscriber_bytes = 1 << 20;  // per stream, before the process's readers pause
    std::chrono::seconds exited_retention{30};
  };

  explicit Registry(net::any_io_executor executor);
  Registry(net::any_io_executor executor, Limits limits);

  // Starts reaping children (SIGCHLD). Call once the io_context exists, before any spawn.
  void start_reaper();

  // On failure returns nullopt and sets errno-style `error`.
  std::optional<Started> start(StartRequest request, int* error);

  // Live processes only (for signals and input).
  std::shared_ptr<Process> find_live(const Selector& selector) const;
  // Live, or exited within the retention window (for Connect).
  std::shared_ptr<Process> find_any(const Selector& selector) const;
  std::vector<std::shared_ptr<Process>> list_live() const;

  // Children the agent starts for itself (language kernels) are not processes of the process
  // service, yet the reaper collects every child: it hands their wait status to `on_exit` once.
  // Call right after spawning, before yielding to the io_context (the reaper runs there).
  void watch_exit(pid_t pid, std::function<void(int wait_status)> on_exit);

  size_t live_count() const { return live_.size(); }

 private:
  void reap();
  void wait_for_sigchld();
  void retire(Process& process);

  net::any_io_executor executor_;
  Limits limits_;
  std::map<pid_t, std::shared_ptr<Process>> live_;
  struct Exited {
    std::shared_ptr<Process> process;
    std::chrono::steady_clock::time_point expires;
  };
  std::multimap<pid_t, Exited> exited_;
  std::map<pid_t, std::function<void(int)>> watched_;
  std::unique_ptr<net::signal_set> sigchld_;
  std::unique_ptr<net::steady_timer> sweeper_;
};

}  // namespace cove::process
