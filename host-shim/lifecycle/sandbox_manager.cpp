#include "lifecycle/sandbox_manager.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "auth/access_tokens.hpp"
#include "auth/api_keys.hpp"
#include "lifecycle/start_command.hpp"
#include "lifecycle/agent_client.hpp"
#include "lifecycle/blocking.hpp"
#include "lifecycle/page_token.hpp"

namespace cove::shim {
namespace {
// Samples are kept for the sandbox's life, up to a day of them (5 s apart).
constexpr size_t kMaxSamples = 17280;

void log_line(const std::string& text) { std::fprintf(stderr, "cove: %s\n", text.c_str()); }

std::chrono::seconds seconds(int64_t s) { return std::chrono::seconds(s); }
}  // namespace

double cpu_used_percent(uint64_t cpu_ns_delta, std::chrono::nanoseconds wall_delta, int cpu_count) {
  if (wall_delta.count() <= 0 || cpu_count <= 0) return 0;
  double pct = 100.0 * static_cast<double>(cpu_ns_delta) /
               (static_cast<double>(wall_delta.count()) * cpu_count);
  return std::clamp(pct, 0.0, 100.0);
}

// A proxied connection; kill shuts its socket down, which ends whatever relays through it.
class SandboxManager::Lease final : public PortLease {
 public:
  Lease(SandboxManager& manager, std::string id, Socket socket)
      : manager_(manager), id_(std::move(id)), socket_(std::move(socket)) {}
  ~Lease() override { manager_.release(this, id_); }
  Socket& socket() override { return socket_; }
  void sever() {
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.cancel(ignored);
  }

 private:
  SandboxManager& manager_;
  std::string id_;
  Socket socket_;
};

SandboxManager::SandboxManager(net::any_io_executor io, Store& store, Runtime& runtime, TokenIssuer tokens,
                               const WallClock& clock, IdSource& ids, ManagerOptions options)
    : io_(std::move(io)),
      store_(store),
      runtime_(runtime),
      tokens_(std::move(tokens)),
      clock_(clock),
      ids_(ids),
      options_(std::move(options)),
      pool_(options_.worker_threads) {
  runtime_.on_exit([this](const std::string& id) { on_runtime_exit(id); });
}

SandboxManager::~SandboxManager() { shutdown(); }

void SandboxManager::shutdown() {
  stopping_ = true;
  pool_.join();
}

SandboxManager::ReconcileReport SandboxManager::reconcile() {
  ReconcileReport report;
  std::set<std::string> handled;
  std::set<std::string> on_host;
  for (auto& id : runtime_.instances()) on_host.insert(id);
  for (auto& record : store_.live_sandboxes()) {
    handled.insert(record.id);
    HostFacts facts;
    // A build sandbox's build died with the old process: it is torn down, never re-attached.
    const bool recoverable = record.team_id != kBuilderTeam;
    if (recoverable) {
      try {
        facts.alive = runtime_.recover(record.id);
      } catch (const std::exception& e) {
        log_line("recover " + record.id + ": " + e.what());
      }
      facts.has_checkpoint = has_checkpoint(record.id);
      facts.has_disk = on_host.count(record.id) > 0;
    }
    const RecoveryPlan plan = recoverable ? plan_recovery(record, facts) : RecoveryPlan{};
    SandboxRecord rec = record;
    if (plan.state != SandboxState::killed) {
      try {
        if (plan.thaw) runtime_.thaw(rec.id);
        if (plan.freeze) runtime_.freeze(rec.id);
      } catch (const std::exception& e) {
        log_line("recover " + rec.id + ": " + e.what());
      }
      if (plan.state != SandboxState::paused || plan.paused_as != PauseKind::cold) discard_checkpoint(rec.id);
      const uint64_t expected = rec.generation;
      const bool changed = rec.state != plan.state || rec.paused_as != plan.paused_as;
      rec.state = plan.state;
      rec.paused_as = plan.paused_as;
      if (rec.state == SandboxState::paused && rec.paused_at == TimePoint{}) rec.paused_at = clock_.now();
      if (changed) {
        rec.generation++;
        store_.update_sandbox(rec, expected);
        log_line("sandbox " + rec.id + " recovered as " + std::string(to_string(rec.state)) + " " +
                 std::string(to_string(rec.paused_as)));
      }
      slots_.insert(rec.slot);
      new_entry(rec);
      ++report.recovered;
      continue;
    }
    // Half-created, half-killed or gone while we were away: make sure nothing is left.
    try {
      runtime_.destroy(record.id);
    } catch (const std::exception& e) {
      log_line("destroy " + record.id + ": " + e.what());
    }
    discard_checkpoint(record.id);
    const uint64_t expected = rec.generation;
    rec.state = SandboxState::killed;
    rec.generation++;
    store_.update_sandbox(rec, expected);
    ++report.lost;
  }
  for (auto& id : on_host) {
    if (handled.count(id)) continue;
    try {
      runtime_.destroy(id);
      ++report.orphans;
    } catch (const std::exception& e) {
      log_line("destroy orphan " + id + ": " + e.what());
    }
  }
  store_.purge_killed(clock_.now() - std::chrono::hours(24));
  return report;
}

void SandboxManager::start_background() {
  net::co_spawn(io_, reaper_loop(), net::detached);
  net::co_spawn(io_, sampler_loop(), net::detached);
}

SandboxManager::Entry* SandboxManager::visible_entry(const std::string& team_id, const std::string& id) {
  auto it = live_.find(id);
  if (it == live_.end()) return nullptr;
  if (team_id != kOperatorTeam && it->second.record.team_id != team_id) return nullptr;
  return &it->second;
}

SandboxManager::Entry& SandboxManager::running_entry(const std::string& team_id, const std::string& id) {
  Entry* entry = visible_entry(team_id, id);
  if (!entry || entry->record.state != SandboxState::running) {
    throw LifecycleError(LifecycleErrc::not_found, sandbox_not_found_message(id));
  }
  return *entry;
}

bool SandboxManager::apply(Entry& entry, SandboxEvent event) {
  auto next = next_state(entry.record.state, event);
  if (!next) return false;
  uint64_t expected = entry.record.generation;
  entry.record.state = *next;
  entry.record.generation++;
  try {
    if (!store_.update_sandbox(entry.record, expected)) {
      log_line("store generation moved under " + entry.record.id + "; memory state wins");
    }
  } catch (const std::exception& e) {
    log_line("store update for " + entry.record.id + " failed: " + e.what());
  }
  return true;
}

void SandboxManager::persist(Entry& entry) {
  try {
    store_.update_sandbox(entry.record, entry.record.generation);
  } catch (const std::exception& e) {
    log_line("store update for " + entry.record.id + " failed: " + e.what());
  }
}

bool SandboxManager::wants_traffic_token(const SandboxRecord& record) const {
  // E2B issues a traffic token only for sandboxes whose ports are not public.
  auto network = nlohmann::json::parse(record.network_json, nullptr, false);
  if (!network.is_object()) return false;
  auto it = network.find("allowPublicTraffic");
  return it != network.end() && it->is_boolean() && !it->get<bool>();
}

SandboxView SandboxManager::view(const SandboxRecord& record) const {
  SandboxView v;
  v.record = record;
  if (record.secure) v.envd_access_token = tokens_.envd_access_token(record.id);
  if (wants_traffic_token(record)) v.traffic_access_token = tokens_.traffic_access_token(record.id);
  v.domain = options_.domain;
  return v;
}

int64_t SandboxManager::checked_timeout(int64_t s) const {
  if (s <= 0) throw LifecycleError(LifecycleErrc::bad_request, "Timeout must be greater than 0 seconds");
  if (s > options_.max_timeout_s) {
    throw LifecycleError(LifecycleErrc::bad_request,
                         "Timeout cannot be greater than " + std::to_string(options_.max_timeout_s) + " seconds");
  }
  return s;
}

int64_t SandboxManager::allocate_slot() {
  int64_t slot = 0;
  for (int64_t used : slots_) {  // ordered: the first gap
    if (used != slot) break;
    ++slot;
  }
  slots_.insert(slot);
  return slot;
}

void SandboxManager::close_leases(Entry& entry) {
  for (Lease* lease : entry.leases) lease->sever();
}

void SandboxManager::release(Lease* lease, const std::string& id) {
  auto it = live_.find(id);
  if (it != live_.end()) it->second.leases.erase(lease);
}

std::optional<Template> SandboxManager::startable_template(const std::string& team_id, const std::string& ref) {
  // "name:tag" names a tagged build of the template.
  std::string name = ref;
  std::string tag;
  if (auto colon = ref.find(':'); colon != std::string::npos) {
    name = ref.substr(0, colon);
    tag = ref.substr(colon + 1);
  }
  auto tpl = store_.template_by_id_or_alias(name);
  // Built-in templates (no team) serve everyone; a team's own only that team (and its builds).
  if (!tpl || (!tpl->is_public && !tpl->team_id.empty() && tpl->team_id != team_id && team_id != kBuilderTeam)) {
    return std::nullopt;
  }
  if (!tag.empty()) {
    std::string build_id;
    for (const auto& t : store_.tags(tpl->id)) {
      if (t.tag == tag) build_id = t.build_id;
    }
    auto build = build_id.empty() ? std::nullopt : store_.build(tpl->id, build_id);
    if (!build || build->status != BuildStatus::ready) return std::nullopt;
    Template tagged = build->result;
    tagged.id = tpl->id;
    tagged.aliases = tpl->aliases;
    tagged.team_id = tpl->team_id;
    tagged.build_id = build_id;
    tagged.is_public = tpl->is_public;
    return tagged;
  }
  return tpl;
}

bool SandboxManager::template_in_use(const std::string& template_id) const {
  for (const auto& [id, entry] : live_) {
    if (entry.record.template_id == template_id && entry.record.team_id != kBuilderTeam &&
        entry.record.state != SandboxState::killed) {
      return true;
    }
  }
  return false;
}

net::awaitable<SandboxView> SandboxManager::create(std::string team_id, CreateRequest request) {
  auto tpl = startable_template(team_id, request.template_ref);
  std::optional<Snapshot> snapshot;
  if (!tpl && !request.build_layers) {
    snapshot = snapshot_for(team_id, request.template_ref);
    if (snapshot) {
      tpl = store_.template_by_id_or_alias(snapshot->template_id);
      if (!tpl) {
        throw LifecycleError(LifecycleErrc::not_found, "the template of snapshot '" + snapshot->id + "' no longer exists");
      }
    }
  }
  if (!tpl) {
    throw LifecycleError(LifecycleErrc::not_found, "template '" + request.template_ref.substr(0, 200) + "' not found");
  }
  if (request.build_layers) {
    tpl->layers = *request.build_layers;
    tpl->start_cmd.clear();
  }
  if (tpl->layers.empty()) {
    throw LifecycleError(LifecycleErrc::not_found,
                         "template '" + request.template_ref.substr(0, 200) + "' has no finished build");
  }
  int64_t timeout = checked_timeout(request.timeout_s.value_or(options_.default_timeout_s));
  if (static_cast<int>(live_.size()) >= options_.max_sandboxes) {
    throw LifecycleError(LifecycleErrc::too_many, "This node runs its maximum of " +
                                                      std::to_string(options_.max_sandboxes) + " sandboxes");
  }

  SandboxRecord rec;
  do {
    rec.id = ids_.sandbox_id();
  } while (live_.count(rec.id) || store_.sandbox(rec.id));
  rec.team_id = team_id;
  rec.template_id = tpl->id;
  if (std::find(tpl->aliases.begin(), tpl->aliases.end(), request.template_ref) != tpl->aliases.end()) {
    rec.alias = request.template_ref;
  } else if (!tpl->aliases.empty()) {
    rec.alias = tpl->aliases.front();
  }
  rec.state = SandboxState::creating;
  rec.generation = 1;
  rec.started_at = clock_.now();
  rec.end_at = rec.started_at + seconds(timeout);
  rec.metadata = std::move(request.metadata);
  rec.env_vars = std::move(request.env_vars);
  rec.cpu_count = tpl->cpu_count;
  rec.memory_mb = tpl->memory_mb;
  rec.disk_size_mb = tpl->disk_size_mb;
  rec.envd_version = tpl->envd_version;
  if (snapshot) {
    // The child is the source as it was: its sizes, agent and environment.
    rec.cpu_count = snapshot->cpu_count;
    rec.memory_mb = snapshot->memory_mb;
    rec.disk_size_mb = snapshot->disk_size_mb;
    rec.envd_version = snapshot->envd_version;
    std::map<std::string, std::string> env = snapshot->env_vars;
    for (auto& [k, v] : rec.env_vars) env[k] = v;
    rec.env_vars = std::move(env);
  }
  rec.secure = request.secure;
  rec.allow_internet_access = request.allow_internet_access;
  rec.auto_pause = request.auto_pause;
  rec.auto_pause_memory = request.auto_pause_memory;
  rec.auto_resume = request.auto_resume;
  rec.network_json = request.network_json;
  rec.slot = allocate_slot();
  try {
    store_.insert_sandbox(rec);
  } catch (...) {
    slots_.erase(rec.slot);
    throw;
  }
  const std::string id = rec.id;
  const uint64_t generation = rec.generation;
  new_entry(rec);

  SandboxSpec spec = spec_for(rec, *tpl);
  spec.changes_dir = request.changes_dir;
  AgentInit init = agent_init_for(rec, *tpl);
  bool restored = false;
  if (snapshot) {
    const std::string dir = snapshot_dir(snapshot->id);
    spec.disk_source = dir + "/disk.img";
    struct stat st;
    if (stat((dir + "/images").c_str(), &st) == 0) {
      spec.checkpoint_dir = dir + "/images";
      restored = true;
      // The restored agent still holds the source's token until this /init replaces it.
      if (auto source = store_.sandbox(snapshot->sandbox_id); source && source->secure) {
        init.previous_token = tokens_.envd_access_token(source->id);
      }
      init.with_timestamp = true;
    }
  }

  std::exception_ptr failure;
  try {
    auto start = [this, spec] { runtime_.start(spec); };  // named: see run_blocking
    co_await run_blocking(pool_, std::move(start));
    if (live_.at(id).record.generation == generation) {
      co_await initialise_agent(runtime_, id, options_.agent_port, init, options_.ready_limit);
      // A restored sandbox's start command is already running, in the checkpoint.
      if (!restored && !tpl->start_cmd.empty() && live_.at(id).record.generation == generation) {
        StartCommand start{tpl->start_cmd, tpl->ready_cmd, init.default_user, init.default_workdir, {},
                           init.access_token};
        for (const auto& kv : init.env_vars) start.env.push_back(kv);
        co_await run_start_command(runtime_, id, options_.agent_port, start, options_.start_ready_limit);
      }
    }
  } catch (...) {
    failure = std::current_exception();
  }

  Entry& entry = live_.at(id);  // only teardown() erases, and only this path tears down a creating one
  if (failure || entry.record.generation != generation) {
    bool killed_meanwhile = entry.kill_requested;
    if (entry.record.state == SandboxState::creating) apply(entry, SandboxEvent::kill);
    close_leases(entry);
    co_await teardown(id);
    if (!killed_meanwhile) {  // a start failure, or its init died while starting
      if (failure) {
        try {
          std::rethrow_exception(failure);
        } catch (const StartCommandError& e) {
          log_line("create " + id + " failed: " + e.what());
          throw LifecycleError(LifecycleErrc::internal, std::string("Failed to start the sandbox: ") + e.what());
        } catch (const RuntimeError& e) {
          log_line("create " + id + " failed: " + e.what());
          if (restored) throw LifecycleError(LifecycleErrc::internal, std::string("Failed to restore the snapshot: ") + e.what());
        } catch (const std::exception& e) {
          log_line("create " + id + " failed: " + e.what());
        }
      }
      throw LifecycleError(LifecycleErrc::internal, "Failed to start the sandbox");
    }
    throw LifecycleError(LifecycleErrc::not_found, "Sandbox \"" + id + "\" was killed while it was starting");
  }
  // The lifetime starts at readiness.
  entry.record.started_at = clock_.now();
  entry.record.end_at = entry.record.started_at + seconds(timeout);
  apply(entry, SandboxEvent::ready);
  net::co_spawn(io_, sample(id), net::detached);
  co_return view(entry.record);
}

net::awaitable<SandboxView> SandboxManager::get(std::string team_id, std::string id) {
  Entry* entry = visible_entry(team_id, id);
  if (!entry || !is_live(entry->record.state)) {
    throw LifecycleError(LifecycleErrc::not_found, sandbox_not_found_message(id));
  }
  co_return view(entry->record);
}

net::awaitable<ListPage> SandboxManager::list(std::string team_id, ListRequest request) {
  SandboxQuery query;
  query.team_id = team_id == kOperatorTeam ? std::string() : team_id;
  query.states = request.states;
  query.metadata = request.metadata;
  if (request.next_token) {
    auto cursor = decode_page_token(*request.next_token);
    if (!cursor) throw LifecycleError(LifecycleErrc::bad_request, "Invalid next token");
    query.after = std::move(cursor);
  }
  size_t limit = std::clamp<size_t>(request.limit, 1, 1000);
  query.limit = limit + 1;  // one more tells whether another page exists
  auto records = store_.list_sandboxes(query);
  ListPage page;
  for (size_t i = 0; i < records.size() && i < limit; ++i) page.items.push_back(view(records[i]));
  if (records.size() > limit) {
    auto& last = page.items.back().record;
    page.next_token = encode_page_token(last.started_at, last.id);
  }
  co_return page;
}

net::awaitable<bool> SandboxManager::kill(std::string team_id, std::string id) {
  Entry* entry = visible_entry(team_id, id);
  if (!entry) co_return false;
  co_return co_await kill_entry(id);
}

net::awaitable<bool> SandboxManager::kill_entry(std::string id) {
  auto it = live_.find(id);
  if (it == live_.end()) co_return false;
  Entry& entry = it->second;
  bool creating = entry.record.state == SandboxState::creating;
  if (!apply(entry, SandboxEvent::kill)) co_return false;  // already on its way out
  entry.kill_requested = true;
  close_leases(entry);
  if (creating) co_return true;  // the create path sees the new generation and tears it down
  co_await teardown(id);
  co_return true;
}

net::awaitable<void> SandboxManager::teardown(std::string id) {
  try {
    auto destroy = [this, id] { runtime_.destroy(id); };
    co_await run_blocking(pool_, std::move(destroy));
  } catch (const std::exception& e) {
    log_line("destroy " + id + ": " + e.what());
  }
  discard_checkpoint(id);
  auto it = live_.find(id);
  if (it == live_.end()) co_return;
  apply(it->second, SandboxEvent::torn_down);
  slots_.erase(it->second.record.slot);
  live_.erase(it);
}

net::awaitable<void> SandboxManager::set_timeout(std::string team_id, std::string id, int64_t timeout_s) {
  Entry& entry = running_entry(team_id, id);
  int64_t timeout = checked_timeout(timeout_s);
  entry.record.end_at = clock_.now() + seconds(timeout);
  persist(entry);
  co_return;
}

net::awaitable<void> SandboxManager::refresh(std::string team_id, std::string id, int64_t duration_s) {
  Entry& entry = running_entry(team_id, id);
  if (duration_s < 0 || duration_s > 3600) {
    throw LifecycleError(LifecycleErrc::bad_request, "Duration must be between 0 and 3600 seconds");
  }
  TimePoint wanted = clock_.now() + seconds(duration_s);
  if (wanted > entry.record.end_at) {
    entry.record.end_at = wanted;
    persist(entry);
  }
  co_return;
}

net::awaitable<std::vector<MetricSample>> SandboxManager::metrics(std::string team_id, std::string id,
                                                                  std::optional<TimePoint> start,
                                                                  std::optional<TimePoint> end) {
  Entry* entry = visible_entry(team_id, id);
  if (!entry || !is_live(entry->record.state)) {
    throw LifecycleError(LifecycleErrc::not_found, sandbox_not_found_message(id));
  }
  std::vector<MetricSample> out;
  for (auto& s : entry->samples) {
    if (start && s.timestamp < *start) continue;
    if (end && s.timestamp > *end) continue;
    out.push_back(s);
  }
  co_return out;
}

net::awaitable<std::map<std::string, MetricSample>> SandboxManager::latest_metrics(std::string team_id,
                                                                                   std::vector<std::string> ids) {
  std::map<std::string, MetricSample> out;
  for (auto& id : ids) {
    Entry* entry = visible_entry(team_id, id);
    if (!entry || entry->record.state != SandboxState::running || entry->samples.empty()) continue;
    out.emplace(id, entry->samples.back());
  }
  co_return out;
}

std::vector<Template> SandboxManager::templates() { return store_.templates(); }

std::optional<Template> SandboxManager::template_by_alias(const std::string& alias) {
  return store_.template_by_id_or_alias(alias);
}

net::awaitable<std::unique_ptr<PortLease>> SandboxManager::open_port(std::string id, uint16_t port) {
  auto it = live_.find(id);
  if (it == live_.end()) co_return nullptr;
  if (it->second.record.state != SandboxState::running) {
    // Traffic resumes a paused sandbox only if it asked for that, and never a filesystem-only
    // pause (its processes would not be the ones the traffic was meant for).
    const SandboxRecord& r = it->second.record;
    bool resumable = r.auto_resume && r.paused_as != PauseKind::filesystem &&
                     (r.state == SandboxState::paused || r.state == SandboxState::pausing ||
                      r.state == SandboxState::resuming);
    if (!resumable) co_return nullptr;
    auto transitions = it->second.transitions;
    auto guard = co_await transitions->lock();
    it = live_.find(id);
    if (it == live_.end()) co_return nullptr;
    if (it->second.record.state == SandboxState::paused) {
      co_await resume_entry(id, true, options_.pause.auto_resume_timeout.count());
      log_line("sandbox " + id + " resumed by traffic");
    }
    it = live_.find(id);
    if (it == live_.end() || it->second.record.state != SandboxState::running) co_return nullptr;
  }
  for (int attempt = 0;; ++attempt) {
    if (it->second.capturing) {  // wait for the snapshot to end
      auto transitions = it->second.transitions;
      { auto guard = co_await transitions->lock(); }
      it = live_.find(id);
      if (it == live_.end() || it->second.record.state != SandboxState::running) co_return nullptr;
    }
    const uint64_t generation = it->second.record.generation;
    const uint64_t captures = it->second.captures;
    Socket socket = co_await runtime_.connect(id, port);
    // A kill may have happened while we connected.
    it = live_.find(id);
    if (it == live_.end() || it->second.record.generation != generation) co_return nullptr;
    if (it->second.captures != captures && attempt < 3) continue;  // a snapshot began meanwhile: redo
    auto lease = std::make_unique<Lease>(*this, id, std::move(socket));
    it->second.leases.insert(lease.get());
    co_return lease;
  }
}

std::optional<std::string> SandboxManager::envd_token(const std::string& id) {
  auto it = live_.find(id);
  if (it == live_.end() || it->second.record.state != SandboxState::running) return std::nullopt;
  return it->second.record.secure ? tokens_.envd_access_token(id) : std::string();
}

std::optional<std::string> SandboxManager::traffic_token(const std::string& id) {
  // A paused sandbox keeps its token: traffic that may resume it is checked like any other.
  auto it = live_.find(id);
  if (it == live_.end() || !is_live(it->second.record.state) || it->second.record.state == SandboxState::creating) {
    return std::nullopt;
  }
  return wants_traffic_token(it->second.record) ? tokens_.traffic_access_token(id) : std::string();
}

std::optional<std::string> SandboxManager::team_for_api_key(const std::string& key) {
  if (!is_well_formed_api_key(key)) return std::nullopt;
  return store_.team_for_key_hash(hash_api_key(key));
}

std::optional<Team> SandboxManager::team_for_access_token(const std::string& token) {
  if (!is_well_formed_access_token(token)) return std::nullopt;
  auto team_id = store_.team_for_access_token_hash(hash_access_token(token));
  if (!team_id) return std::nullopt;
  return store_.team_by_id(*team_id);
}

void SandboxManager::on_runtime_exit(const std::string& id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  Entry& entry = it->second;
  // Pauses end the processes on purpose (filesystem-only, cold); a failed resume is handled
  // by the resume itself.
  SandboxState state = entry.record.state;
  if (state == SandboxState::pausing || state == SandboxState::paused || state == SandboxState::resuming) return;
  bool creating = state == SandboxState::creating;
  if (!apply(entry, SandboxEvent::exited)) return;  // a kill is already tearing it down
  log_line("sandbox " + id + " exited by itself");
  close_leases(entry);
  if (!creating) net::co_spawn(io_, teardown(id), net::detached);
}

net::awaitable<void> SandboxManager::reaper_loop() {
  net::steady_timer timer(io_);
  while (!stopping_) {
    timer.expires_after(options_.reaper_interval);
    co_await timer.async_wait(net::use_awaitable);
    TimePoint now = clock_.now();
    std::vector<std::pair<std::string, ReaperAction>> due;
    for (auto& [id, entry] : live_) {
      if (entry.reaper_busy) continue;
      ReaperAction action = reaper_action(entry.record, now, options_.pause);
      if (action == ReaperAction::none) continue;
      if (action != ReaperAction::kill) entry.reaper_busy = true;
      due.emplace_back(id, action);
    }
    for (auto& [id, action] : due) {
      switch (action) {
        case ReaperAction::kill: net::co_spawn(io_, kill_entry(id), net::detached); break;
        case ReaperAction::pause_warm: net::co_spawn(io_, reaper_pause(id, PauseKind::warm), net::detached); break;
        case ReaperAction::pause_filesystem:
          net::co_spawn(io_, reaper_pause(id, PauseKind::filesystem), net::detached);
          break;
        case ReaperAction::make_cold: net::co_spawn(io_, reaper_make_cold(id), net::detached); break;
        case ReaperAction::none: break;
      }
    }
  }
}

net::awaitable<void> SandboxManager::sampler_loop() {
  net::steady_timer timer(io_);
  while (!stopping_) {
    timer.expires_after(options_.metrics_interval);
    co_await timer.async_wait(net::use_awaitable);
    std::vector<std::string> ids;
    for (auto& [id, entry] : live_) {
      if (entry.record.state == SandboxState::running) ids.push_back(id);
    }
    for (auto& id : ids) co_await sample(id);
  }
}

net::awaitable<void> SandboxManager::sample(std::string id) {
  std::optional<SandboxStats> stats;
  try {
    auto read_stats = [this, id] { return runtime_.stats(id); };
    stats = co_await run_blocking(pool_, std::move(read_stats));
  } catch (const std::exception& e) {
    log_line("stats " + id + ": " + e.what());
  }
  auto it = live_.find(id);
  if (!stats || it == live_.end() || it->second.record.state != SandboxState::running) co_return;
  Entry& entry = it->second;
  MetricSample s;
  s.timestamp = clock_.now();
  s.cpu_count = stats->cpu_count ? stats->cpu_count : entry.record.cpu_count;
  TimePoint since = entry.last_cpu_at == TimePoint{} ? entry.record.started_at : entry.last_cpu_at;
  s.cpu_used_pct = cpu_used_percent(stats->cpu_usage_ns - std::min(stats->cpu_usage_ns, entry.last_cpu_ns),
                                    std::chrono::duration_cast<std::chrono::nanoseconds>(s.timestamp - since),
                                    s.cpu_count);
  entry.last_cpu_ns = stats->cpu_usage_ns;
  entry.last_cpu_at = s.timestamp;
  s.mem_used = stats->memory_used;
  s.mem_total = stats->memory_total;
  s.disk_used = stats->disk_used;
  s.disk_total = stats->disk_total;
  entry.samples.push_back(s);
  if (entry.samples.size() > kMaxSamples) entry.samples.pop_front();
}

}  // namespace cove::shim
