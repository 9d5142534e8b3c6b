// Pausing and resuming (SandboxManager, continued). Two tiers: a warm pause freezes the
// sandbox's cgroup and keeps its memory; the reaper later checkpoints a warm pause to disk (cold)
// and releases its processes. A filesystem-only pause ends the processes and keeps the disk.
// Every transition holds the sandbox's transition lock and is fenced by its generation: a kill
// that lands meanwhile wins, and the transition only cleans up after itself.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "lifecycle/blocking.hpp"
#include "lifecycle/sandbox_manager.hpp"
#include "lifecycle/start_command.hpp"

namespace cove::shim {
namespace {
void log_line(const std::string& text) { std::fprintf(stderr, "cove: %s\n", text.c_str()); }

}  // namespace

// Runtime errors name no host paths by contract, so their text is safe for clients.
std::string failure_reason(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
  }
  return "unknown error";
}

net::awaitable<SandboxManager::Locked> SandboxManager::lock_transitions(std::string team_id, std::string id) {
  Entry* entry = visible_entry(team_id, id);
  if (!entry || !is_live(entry->record.state)) {
    throw LifecycleError(LifecycleErrc::not_found, sandbox_not_found_message(id));
  }
  auto transitions = entry->transitions;  // outlives the entry if a kill erases it meanwhile
  auto guard = co_await transitions->lock();
  entry = visible_entry(team_id, id);
  if (!entry || !is_live(entry->record.state)) {
    throw LifecycleError(LifecycleErrc::not_found, sandbox_not_found_message(id));
  }
  co_return Locked{std::move(guard), entry};
}

SandboxManager::Entry& SandboxManager::new_entry(const SandboxRecord& record) {
  Entry entry{record};
  entry.transitions = std::make_shared<async::FifoMutex>(io_);
  return live_.insert_or_assign(record.id, std::move(entry)).first->second;
}

std::string SandboxManager::sandbox_checkpoint_dir(const std::string& id) const {
  return options_.checkpoints_dir + "/sandboxes/" + id;
}

bool SandboxManager::has_checkpoint(const std::string& id) const {
  struct stat st;
  return !options_.checkpoints_dir.empty() && stat(sandbox_checkpoint_dir(id).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void SandboxManager::discard_checkpoint(const std::string& id) {
  if (options_.checkpoints_dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(sandbox_checkpoint_dir(id), ec);
  std::filesystem::remove_all(sandbox_checkpoint_dir(id) + ".partial", ec);
}

std::optional<Template> SandboxManager::template_of(const SandboxRecord& record) {
  auto tpl = store_.template_by_id_or_alias(record.template_id);
  if (!tpl) return std::nullopt;
  return tpl;
}

SandboxSpec SandboxManager::spec_for(const SandboxRecord& record, const Template& tpl) const {
  SandboxSpec spec;
  spec.id = record.id;
  spec.slot = record.slot;
  spec.layers = options_.extra_layers;
  spec.layers.insert(spec.layers.end(), tpl.layers.begin(), tpl.layers.end());
  spec.cpu_count = record.cpu_count;
  spec.memory_mb = record.memory_mb;
  spec.disk_size_mb = record.disk_size_mb;
  spec.pids_max = options_.pids_max;
  spec.allow_internet_access = record.allow_internet_access;
  spec.agent_port = options_.agent_port;
  return spec;
}

AgentInit SandboxManager::agent_init_for(const SandboxRecord& record, const Template& tpl) const {
  AgentInit init;
  for (const auto& [k, v] : tpl.env) init.env_vars[k] = v;  // the template's ENV, under the request's
  for (const auto& [k, v] : record.env_vars) init.env_vars[k] = v;
  if (record.secure) init.access_token = tokens_.envd_access_token(record.id);
  init.default_user = tpl.user.empty() ? "user" : tpl.user;
  init.default_workdir = !tpl.workdir.empty()            ? tpl.workdir
                         : init.default_user == "root" ? "/root"
                                                       : "/home/" + init.default_user;
  return init;
}

// The agent drops its host connections and suspends its watchers, which a checkpoint cannot
// carry. Best effort: a warm pause works without it, and a dump that still finds a connection
// fails cleanly and leaves the sandbox warm.
net::awaitable<void> SandboxManager::quiesce_agent(std::string id) {
  auto it = live_.find(id);
  if (it == live_.end()) co_return;
  std::string token = it->second.record.secure ? tokens_.envd_access_token(id) : std::string();
  try {
    co_await cove::shim::quiesce_agent(runtime_, id, options_.agent_port, token, std::chrono::milliseconds(5000));
  } catch (const std::exception& e) {
    log_line("sandbox " + id + ": agent /freeze: " + e.what());
  }
}

net::awaitable<void> SandboxManager::quiesce_and_checkpoint(std::string id, CheckpointRequest request) {
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    co_await quiesce_agent(id);
    auto freeze = [this, id] { runtime_.freeze(id); };
    co_await run_blocking(pool_, std::move(freeze));
    bool busy = false;
    try {
      auto dump = [this, id, request] { runtime_.checkpoint(id, request); };
      co_await run_blocking(pool_, std::move(dump));
      co_return;
    } catch (const CheckpointBusyError& e) {
      if (attempt == kAttempts) throw;
      busy = true;
    }
    if (busy) {
      log_line("checkpoint " + id + ": a connection raced the quiesce; quiescing again");
      auto thaw = [this, id] { runtime_.thaw(id); };
      co_await run_blocking(pool_, std::move(thaw));
    }
  }
}

net::awaitable<void> SandboxManager::pause(std::string team_id, std::string id, bool memory) {
  Locked locked = co_await lock_transitions(team_id, id);
  if (locked.entry->record.state == SandboxState::paused) {
    throw LifecycleError(LifecycleErrc::conflict, "Sandbox \"" + id + "\" is already paused");
  }
  if (locked.entry->record.state != SandboxState::running) {
    throw LifecycleError(LifecycleErrc::conflict, "Sandbox \"" + id + "\" is not running");
  }
  co_await pause_entry(id, memory ? PauseKind::warm : PauseKind::filesystem);
}

// Caller holds the transition lock; the sandbox is running.
net::awaitable<void> SandboxManager::pause_entry(std::string id, PauseKind kind) {
  Entry& entry = live_.at(id);
  entry.record.paused_as = kind;
  entry.record.paused_at = clock_.now();
  apply(entry, SandboxEvent::pause);
  const uint64_t generation = entry.record.generation;
  close_leases(entry);  // its routes close: the edge answers 502 (or resumes) from here on
  co_await quiesce_agent(id);
  std::exception_ptr failure;
  try {
    if (kind == PauseKind::warm) {
      auto freeze = [this, id] { runtime_.freeze(id); };
      co_await run_blocking(pool_, std::move(freeze));
    } else {
      auto stop = [this, id] { runtime_.stop(id); };
      co_await run_blocking(pool_, std::move(stop));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  auto it = live_.find(id);
  if (it == live_.end() || it->second.record.generation != generation) {
    throw LifecycleError(LifecycleErrc::not_found, "Sandbox \"" + id + "\" was killed while it was pausing");
  }
  if (failure) {
    std::string why = failure_reason(failure);
    log_line("pause " + id + " failed: " + why);
    try {
      auto thaw = [this, id] { runtime_.thaw(id); };
      co_await run_blocking(pool_, std::move(thaw));
    } catch (const std::exception&) {
    }
    it->second.record.paused_as = PauseKind::none;
    apply(it->second, SandboxEvent::failed);
    throw LifecycleError(LifecycleErrc::internal, "Failed to pause the sandbox: " + why);
  }
  apply(it->second, SandboxEvent::paused);
  if (kind == PauseKind::warm && options_.pause.cold_after.count() == 0) {
    net::co_spawn(io_, reaper_make_cold(id), net::detached);
  }
}

// Connect extends a running sandbox's lifetime, never shortens it.
SandboxView SandboxManager::extend_for_connect(Entry& entry, int64_t timeout_s) {
  TimePoint wanted = clock_.now() + std::chrono::seconds(timeout_s);
  if (wanted > entry.record.end_at) {
    entry.record.end_at = wanted;
    persist(entry);
  }
  return view(entry.record);
}

net::awaitable<std::pair<SandboxView, bool>> SandboxManager::connect(std::string team_id, std::string id,
                                                                     std::optional<int64_t> timeout_s, bool memory) {
  Entry* entry = visible_entry(team_id, id);
  if (!entry || !is_live(entry->record.state)) {
    throw LifecycleError(LifecycleErrc::not_found, sandbox_not_found_message(id));
  }
  int64_t timeout = checked_timeout(timeout_s.value_or(options_.default_timeout_s));
  if (entry->record.state == SandboxState::running) co_return std::make_pair(extend_for_connect(*entry, timeout), false);
  Locked locked = co_await lock_transitions(team_id, id);
  if (locked.entry->record.state == SandboxState::running) {  // resumed by someone else meanwhile
    co_return std::make_pair(extend_for_connect(*locked.entry, timeout), false);
  }
  if (locked.entry->record.state != SandboxState::paused) {
    throw LifecycleError(LifecycleErrc::conflict, "Sandbox \"" + id + "\" is still starting");
  }
  co_await resume_entry(id, memory, timeout);
  co_return std::make_pair(view(live_.at(id).record), true);
}

// Caller holds the transition lock; the sandbox is paused.
net::awaitable<void> SandboxManager::resume_entry(std::string id, bool memory, int64_t timeout_s) {
  Entry& entry = live_.at(id);
  auto tpl = template_of(entry.record);
  if (!tpl) throw LifecycleError(LifecycleErrc::internal, "The sandbox's template no longer exists");
  PauseKind kind = entry.record.paused_as;
  SandboxSpec spec = spec_for(entry.record, *tpl);
  AgentInit init = agent_init_for(entry.record, *tpl);
  init.with_timestamp = true;
  apply(entry, SandboxEvent::resume);
  const uint64_t generation = entry.record.generation;
  std::exception_ptr failure;
  try {
    if (!memory && kind != PauseKind::filesystem) {
      // A reboot over the kept files: whatever memory state there is goes.
      auto stop = [this, id] { runtime_.stop(id); };
      co_await run_blocking(pool_, std::move(stop));
      discard_checkpoint(id);
      kind = PauseKind::filesystem;
      entry.record.paused_as = kind;
      persist(entry);
    }
    if (kind == PauseKind::warm) {
      auto thaw = [this, id] { runtime_.thaw(id); };
      co_await run_blocking(pool_, std::move(thaw));
    } else {
      spec.disk_source = std::string(kKeepDisk);
      if (kind == PauseKind::cold) spec.checkpoint_dir = sandbox_checkpoint_dir(id);
      auto start = [this, spec] { runtime_.start(spec); };
      co_await run_blocking(pool_, std::move(start));
    }
    if (live_.at(id).record.generation == generation) {
      co_await initialise_agent(runtime_, id, options_.agent_port, init, options_.ready_limit);
    }
    if (kind == PauseKind::filesystem && !tpl->start_cmd.empty() && live_.at(id).record.generation == generation) {
      StartCommand start{tpl->start_cmd, tpl->ready_cmd, init.default_user, init.default_workdir, {}, init.access_token};
      for (const auto& kv : init.env_vars) start.env.push_back(kv);
      co_await run_start_command(runtime_, id, options_.agent_port, start, options_.start_ready_limit);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  auto it = live_.find(id);
  if (it == live_.end() || it->second.record.generation != generation) {
    throw LifecycleError(LifecycleErrc::not_found, "Sandbox \"" + id + "\" was killed while it was resuming");
  }
  Entry& after = it->second;
  if (failure) {
    std::string why = failure_reason(failure);
    log_line("resume " + id + " failed: " + why);
    // Back to a pause that can be retried: a half-restored tree is stopped; a warm one refrozen.
    try {
      if (kind == PauseKind::warm) {
        auto freeze = [this, id] { runtime_.freeze(id); };
        co_await run_blocking(pool_, std::move(freeze));
      } else {
        auto stop = [this, id] { runtime_.stop(id); };
        co_await run_blocking(pool_, std::move(stop));
      }
    } catch (const std::exception& e) {
      log_line("resume " + id + ": cleanup failed: " + e.what());
    }
    apply(after, SandboxEvent::failed);
    throw LifecycleError(LifecycleErrc::internal, "Failed to resume the sandbox: " + why);
  }
  if (kind == PauseKind::cold) discard_checkpoint(id);
  after.record.paused_as = PauseKind::none;
  after.record.paused_at = TimePoint{};
  after.record.end_at = clock_.now() + std::chrono::seconds(timeout_s);
  after.last_cpu_at = TimePoint{};
  after.last_cpu_ns = 0;
  apply(after, SandboxEvent::resumed);
}

net::awaitable<void> SandboxManager::make_cold(std::string team_id, std::string id) {
  Locked locked = co_await lock_transitions(team_id, id);
  if (locked.entry->record.state != SandboxState::paused) {
    throw LifecycleError(LifecycleErrc::conflict, "Sandbox \"" + id + "\" is not paused");
  }
  if (locked.entry->record.paused_as != PauseKind::warm) co_return;  // already on disk
  co_await make_cold_entry(id);
}

// Caller holds the transition lock; the sandbox is warm-paused. The images are written beside
// their final place and renamed into it, so a checkpoint directory is always complete.
net::awaitable<void> SandboxManager::make_cold_entry(std::string id) {
  if (options_.checkpoints_dir.empty()) {
    throw LifecycleError(LifecycleErrc::internal, "Checkpoints are not configured");
  }
  const uint64_t generation = live_.at(id).record.generation;
  const std::string dir = sandbox_checkpoint_dir(id);
  const std::string partial = dir + ".partial";
  std::exception_ptr failure;
  try {
    discard_checkpoint(id);
    std::filesystem::create_directories(partial);
    // A connection that was being opened when the pause came may have reached the agent after its
    // /freeze; thawed for a moment, the agent lets go of it too.
    auto thaw = [this, id] { runtime_.thaw(id); };
    co_await run_blocking(pool_, std::move(thaw));
    CheckpointRequest request{partial, false};
    co_await quiesce_and_checkpoint(id, request);
    std::filesystem::rename(partial, dir);
  } catch (...) {
    failure = std::current_exception();
  }
  auto it = live_.find(id);
  if (it == live_.end() || it->second.record.generation != generation) {
    discard_checkpoint(id);
    co_return;  // killed meanwhile: its teardown removes the rest
  }
  if (failure) {
    std::error_code ec;
    std::filesystem::remove_all(partial, ec);
    std::string why = failure_reason(failure);
    log_line("checkpoint " + id + " failed (it stays paused in memory): " + why);
    throw LifecycleError(LifecycleErrc::internal, "Failed to checkpoint the sandbox: " + why);
  }
  Entry& entry = it->second;
  uint64_t expected = entry.record.generation;
  entry.record.paused_as = PauseKind::cold;
  entry.record.generation++;
  try {
    store_.update_sandbox(entry.record, expected);
  } catch (const std::exception& e) {
    log_line("store update for " + id + " failed: " + e.what());
  }
}

net::awaitable<void> SandboxManager::reaper_pause(std::string id, PauseKind kind) {
  auto it = live_.find(id);
  if (it == live_.end()) co_return;
  auto transitions = it->second.transitions;
  {
    auto guard = co_await transitions->lock();
    it = live_.find(id);
    if (it != live_.end() && it->second.record.state == SandboxState::running) {
      try {
        co_await pause_entry(id, kind);
      } catch (const std::exception& e) {
        log_line("auto-pause " + id + ": " + e.what());
      }
    }
  }
  it = live_.find(id);
  if (it != live_.end()) it->second.reaper_busy = false;
}

net::awaitable<void> SandboxManager::reaper_make_cold(std::string id) {
  auto it = live_.find(id);
  if (it == live_.end()) co_return;
  auto transitions = it->second.transitions;
  bool failed = false;
  {
    auto guard = co_await transitions->lock();
    it = live_.find(id);
    if (it != live_.end() && it->second.record.state == SandboxState::paused &&
        it->second.record.paused_as == PauseKind::warm) {
      try {
        co_await make_cold_entry(id);
      } catch (const std::exception&) {
        failed = true;  // logged; it stays warm
      }
    }
  }
  it = live_.find(id);
  if (it == live_.end()) co_return;
  if (failed) {
    // Not again before another cold_after: a sandbox that cannot be checkpointed stays warm.
    it->second.record.paused_at = clock_.now();
    persist(it->second);
  }
  it->second.reaper_busy = false;
}

}  // namespace cove::shim
