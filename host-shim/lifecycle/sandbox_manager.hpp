#pragma once
// The Lifecycle implementation: owns every live sandbox's record (write-through to the store),
// drives the runtime, enforces lifetimes (the reaper), samples metrics, and hands out port leases
// that a kill closes at once. Everything here runs on one io executor (no locks); blocking runtime
// calls go to a worker pool and resume back on it.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "async/fifo_mutex.hpp"
#include "auth/tokens.hpp"
#include "lifecycle/clock.hpp"
#include "lifecycle/agent_client.hpp"
#include "lifecycle/lifecycle.hpp"
#include "lifecycle/pause_policy.hpp"
#include "lifecycle/state_machine.hpp"
#include "runtime/runtime.hpp"
#include "store/store.hpp"

namespace cove::shim {

struct ManagerOptions {
  std::string domain;
  int64_t default_timeout_s = 300;
  int64_t max_timeout_s = 86400;
  int pids_max = 4096;
  int max_sandboxes = 1000;
  uint16_t agent_port = 49983;
  std::vector<std::string> extra_layers;   // placed above every template's layers (the agent)
  std::chrono::milliseconds ready_limit{10000};
  std::chrono::milliseconds start_ready_limit{50000};  // a template's ready command must pass within it
  std::chrono::milliseconds reaper_interval{100};
  std::chrono::milliseconds metrics_interval{5000};
  size_t worker_threads = 8;
  // Checkpoints of cold-paused sandboxes (<dir>/sandboxes/<id>) and snapshots (<dir>/snapshots/<id>).
  std::string checkpoints_dir;
  PauseSettings pause;
};

// The team id that sees every team's sandboxes (operator commands on the admin socket).
inline constexpr std::string_view kOperatorTeam = "*";

class SandboxManager final : public Lifecycle {
 public:
  SandboxManager(net::any_io_executor io, Store& store, Runtime& runtime, TokenIssuer tokens,
                 const WallClock& clock, IdSource& ids, ManagerOptions options);
  ~SandboxManager() override;

  // Before the listeners open (blocking): survivors of a restart are re-attached, records of
  // dead sandboxes are marked killed, instances without a live record are removed.
  struct ReconcileReport {
    size_t recovered = 0, lost = 0, orphans = 0;
  };
  ReconcileReport reconcile();
  // Starts the reaper and the metrics sampler on the io executor.
  void start_background();
  // Stops background loops and waits for worker threads (sandboxes keep running).
  void shutdown();

  net::awaitable<SandboxView> create(std::string team_id, CreateRequest request) override;
  net::awaitable<std::pair<SandboxView, bool>> connect(std::string team_id, std::string id,
                                                       std::optional<int64_t> timeout_s, bool memory) override;
  net::awaitable<void> pause(std::string team_id, std::string id, bool memory) override;
  net::awaitable<Snapshot> create_snapshot(std::string team_id, std::string id, std::string name) override;
  net::awaitable<std::vector<Snapshot>> list_snapshots(std::string team_id, std::string sandbox_id,
                                                       std::string name) override;
  net::awaitable<bool> delete_snapshot(std::string team_id, std::string id) override;
  net::awaitable<std::vector<ForkOutcome>> fork(std::string team_id, std::string id, int count,
                                                std::optional<int64_t> timeout_s) override;
  // Operator: checkpoints a warm-paused sandbox to disk now (the cold tier), releasing its memory.
  net::awaitable<void> make_cold(std::string team_id, std::string id);
  net::awaitable<SandboxView> get(std::string team_id, std::string id) override;
  net::awaitable<ListPage> list(std::string team_id, ListRequest request) override;
  net::awaitable<bool> kill(std::string team_id, std::string id) override;
  net::awaitable<void> set_timeout(std::string team_id, std::string id, int64_t timeout_s) override;
  net::awaitable<void> refresh(std::string team_id, std::string id, int64_t duration_s) override;
  net::awaitable<std::vector<MetricSample>> metrics(std::string team_id, std::string id,
                                                    std::optional<TimePoint> start,
                                                    std::optional<TimePoint> end) override;
  net::awaitable<std::map<std::string, MetricSample>> latest_metrics(std::string team_id,
                                                                     std::vector<std::string> ids) override;
  std::vector<Template> templates() override;
  std::optional<Template> template_by_alias(const std::string& alias) override;
  net::awaitable<std::unique_ptr<PortLease>> open_port(std::string id, uint16_t port) override;
  std::optional<std::string> envd_token(const std::string& id) override;
  std::optional<std::string> traffic_token(const std::string& id) override;
  std::optional<std::string> team_for_api_key(const std::string& key) override;
  std::optional<Team> team_for_access_token(const std::string& token) override;

  size_t live_count() const { return live_.size(); }
  // The template `ref` ("name", "id" or "name:tag") as `team_id` may start it; nullopt if it
  // does not exist for that team.
  std::optional<Template> startable_template(const std::string& team_id, const std::string& ref);
  // Whether a sandbox of any team (build sandboxes aside) from this template is alive.
  bool template_in_use(const std::string& template_id) const;

 private:
  class Lease;
  struct Entry {
    SandboxRecord record;
    std::deque<MetricSample> samples;
    uint64_t last_cpu_ns = 0;
    TimePoint last_cpu_at{};
    std::set<Lease*> leases;
    bool kill_requested = false;  // by a user, the reaper or the operator (not a crash)
    // Pause, resume, cold conversion and snapshots of one sandbox happen one at a time, in order.
    std::shared_ptr<async::FifoMutex> transitions;
    bool reaper_busy = false;     // the reaper already started something for it
    // A snapshot is being taken of it while it runs: new connections wait (the agent must hold
    // none during the dump); `captures` counts them, so a connection that raced one is redone.
    bool capturing = false;
    uint64_t captures = 0;
  };

  Entry* visible_entry(const std::string& team_id, const std::string& id);
  Entry& running_entry(const std::string& team_id, const std::string& id);
  bool apply(Entry& entry, SandboxEvent event);
  void persist(Entry& entry);
  SandboxView view(const SandboxRecord& record) const;
  bool wants_traffic_token(const SandboxRecord& record) const;
  int64_t checked_timeout(int64_t seconds) const;
  int64_t allocate_slot();
  void close_leases(Entry& entry);
  void release(Lease* lease, const std::string& id);
  net::awaitable<bool> kill_entry(std::string id);
  net::awaitable<void> teardown(std::string id);
  net::awaitable<void> reaper_loop();
  net::awaitable<void> sampler_loop();
  net::awaitable<void> sample(std::string id);
  void on_runtime_exit(const std::string& id);

  // Pausing (sandbox_pause.cpp).
  Entry& new_entry(const SandboxRecord& record);
  // Waits for the sandbox's transition lock; throws not_found unless it is (still) alive and the
  // team's. The entry pointer is valid while the guard is held and nothing erased it.
  struct Locked {
    async::FifoMutex::Guard guard;
    Entry* entry;
  };
  net::awaitable<Locked> lock_transitions(std::string team_id, std::string id);
  SandboxView extend_for_connect(Entry& entry, int64_t timeout_s);
  net::awaitable<void> pause_entry(std::string id, PauseKind kind);
  net::awaitable<void> resume_entry(std::string id, bool memory, int64_t timeout_s);
  net::awaitable<void> make_cold_entry(std::string id);
  net::awaitable<void> reaper_pause(std::string id, PauseKind kind);
  net::awaitable<void> reaper_make_cold(std::string id);
  net::awaitable<void> quiesce_agent(std::string id);
  // Quiesces the agent, freezes the sandbox and dumps it; a dump that found a connection from
  // outside (one that raced the quiesce) is retried after quiescing again. Leaves it frozen.
  net::awaitable<void> quiesce_and_checkpoint(std::string id, CheckpointRequest request);
  void discard_checkpoint(const std::string& id);
  std::string sandbox_checkpoint_dir(const std::string& id) const;
  bool has_checkpoint(const std::string& id) const;
  // How a sandbox's processes start (again): its template, or the template its snapshot came from.
  std::optional<Template> template_of(const SandboxRecord& record);
  SandboxSpec spec_for(const SandboxRecord& record, const Template& tpl) const;
  AgentInit agent_init_for(const SandboxRecord& record, const Template& tpl) const;

  // Snapshots and forks (sandbox_snapshots.cpp).
  std::string snapshot_dir(const std::string& snapshot_id) const;
  // The team's snapshot named by `ref` (its id or a name, with or without ":default").
  std::optional<Snapshot> snapshot_for(const std::string& team_id, const std::string& ref);
  // Checkpoints a running or paused sandbox into `dir` (images/ + disk.img), leaving it as it was.
  net::awaitable<void> capture(std::string id, std::string dir);
  net::awaitable<Snapshot> take_snapshot(std::string team_id, std::string id, std::vector<std::string> names);

  net::any_io_executor io_;
  Store& store_;
  Runtime& runtime_;
  TokenIssuer tokens_;
  const WallClock& clock_;
  IdSource& ids_;
  ManagerOptions options_;
  boost::asio::thread_pool pool_;
  std::map<std::string, Entry, std::less<>> live_;  // every sandbox not yet killed
  std::set<int64_t> slots_;
  bool stopping_ = false;
};

// The text of a failure, for logs and (runtime errors carry no host paths) clients.
std::string failure_reason(std::exception_ptr failure);

// CPU use over an interval as a share of the sandbox's CPUs, in percent (0..100).
double cpu_used_percent(uint64_t cpu_ns_delta, std::chrono::nanoseconds wall_delta, int cpu_count);

}  // namespace cove::shim
