// Snapshots and forks (SandboxManager, continued). A snapshot is a checkpoint of a sandbox's
// processes and memory plus a copy of its disk, taken while it is frozen for a moment and then
// thawed; new sandboxes start from it with their own id, tokens, network address and disk. A fork
// is a snapshot nobody names, started `count` times and then forgotten.
#include <boost/asio/use_awaitable.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "lifecycle/blocking.hpp"
#include "lifecycle/sandbox_manager.hpp"

namespace cove::shim {
namespace {
void log_line(const std::string& text) { std::fprintf(stderr, "cove: %s\n", text.c_str()); }

constexpr int kMaxForks = 100;
constexpr std::string_view kDefaultTag = ":default";

// "name" and "name:default" name the same snapshot (E2B shows snapshots as tagged templates).
std::string without_default_tag(std::string_view ref) {
  if (ref.size() > kDefaultTag.size() && ref.substr(ref.size() - kDefaultTag.size()) == kDefaultTag) {
    ref.remove_suffix(kDefaultTag.size());
  }
  return std::string(ref);
}

bool names_snapshot(const Snapshot& snap, const std::string& ref) {
  std::string plain = without_default_tag(ref);
  if (snap.id == plain) return true;
  return std::any_of(snap.names.begin(), snap.names.end(),
                     [&](const std::string& n) { return without_default_tag(n) == plain; });
}
}  // namespace

std::string SandboxManager::snapshot_dir(const std::string& snapshot_id) const {
  return options_.checkpoints_dir + "/snapshots/" + snapshot_id;
}

std::optional<Snapshot> SandboxManager::snapshot_for(const std::string& team_id, const std::string& ref) {
  std::string plain = without_default_tag(ref);
  if (auto snap = store_.snapshot(plain); snap && (snap->team_id == team_id || team_id == kOperatorTeam)) {
    return snap;
  }
  for (auto& snap : store_.snapshots(team_id == kOperatorTeam ? std::string() : team_id, "")) {
    if (names_snapshot(snap, ref)) return snap;
  }
  return std::nullopt;
}

// Caller holds the sandbox's transition lock. A running sandbox is frozen only for the dump and
// the disk copy; its agent is told to quiesce first and re-armed after.
net::awaitable<void> SandboxManager::capture(std::string id, std::string dir) {
  Entry& entry = live_.at(id);
  const SandboxState state = entry.record.state;
  const PauseKind kind = entry.record.paused_as;
  const uint64_t generation = entry.record.generation;
  if (options_.checkpoints_dir.empty()) {
    throw LifecycleError(LifecycleErrc::internal, "Checkpoints are not configured");
  }
  std::filesystem::create_directories(dir);
  std::exception_ptr failure;
  bool thaw = false;
  try {
    if (state == SandboxState::running || kind == PauseKind::warm) {
      if (state == SandboxState::running) {
        entry.capturing = true;
        entry.captures++;
        close_leases(entry);
        thaw = true;  // it goes on running afterwards
      } else {
        // Thawed for a moment so that its agent can let go of what the dump cannot carry.
        auto unfreeze = [this, id] { runtime_.thaw(id); };
        co_await run_blocking(pool_, std::move(unfreeze));
      }
      CheckpointRequest request{dir + "/images", true};
      std::filesystem::create_directories(request.dir);
      co_await quiesce_and_checkpoint(id, request);
    } else if (kind == PauseKind::cold) {
      std::filesystem::copy(sandbox_checkpoint_dir(id), dir + "/images", std::filesystem::copy_options::recursive);
    }
    // A filesystem-only pause has no memory to keep: its snapshot boots over the disk copy.
    std::string disk = dir + "/disk.img";
    auto copy_disk = [this, id, disk] { runtime_.export_disk(id, disk); };
    co_await run_blocking(pool_, std::move(copy_disk));
  } catch (...) {
    failure = std::current_exception();
  }
  if (auto it = live_.find(id); it != live_.end()) it->second.capturing = false;
  if (failure && state == SandboxState::paused && kind == PauseKind::warm) {
    try {  // it was thawed for the quiesce: paused means frozen
      auto refreeze = [this, id] { runtime_.freeze(id); };
      co_await run_blocking(pool_, std::move(refreeze));
    } catch (const std::exception& e) {
      log_line("snapshot " + id + ": refreeze failed: " + e.what());
    }
  }
  if (thaw) {
    try {
      auto unfreeze = [this, id] { runtime_.thaw(id); };
      co_await run_blocking(pool_, std::move(unfreeze));
      auto it = live_.find(id);
      if (it != live_.end() && it->second.record.generation == generation) {
        auto tpl = template_of(it->second.record);
        if (tpl) {
          AgentInit init = agent_init_for(it->second.record, *tpl);
          init.with_timestamp = true;
          co_await initialise_agent(runtime_, id, options_.agent_port, init, options_.ready_limit);
        }
      }
    } catch (const std::exception& e) {
      log_line("snapshot " + id + ": thaw failed: " + e.what());
    }
  }
  if (failure) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::string why = failure_reason(failure);
    log_line("snapshot of " + id + " failed: " + why);
    throw LifecycleError(LifecycleErrc::internal, "Failed to snapshot the sandbox: " + why);
  }
}

net::awaitable<Snapshot> SandboxManager::take_snapshot(std::string team_id, std::string id,
                                                       std::vector<std::string> names) {
  Locked locked = co_await lock_transitions(team_id, id);
  Entry* entry = locked.entry;
  if (entry->record.state != SandboxState::running && entry->record.state != SandboxState::paused) {
    throw LifecycleError(LifecycleErrc::conflict, "Sandbox \"" + id + "\" is still starting");
  }
  Snapshot snap;
  do {
    snap.id = ids_.sandbox_id();
  } while (store_.snapshot(snap.id) || live_.count(snap.id));
  snap.team_id = entry->record.team_id;
  snap.sandbox_id = id;
  snap.names = std::move(names);
  snap.template_id = entry->record.template_id;
  snap.cpu_count = entry->record.cpu_count;
  snap.memory_mb = entry->record.memory_mb;
  snap.disk_size_mb = entry->record.disk_size_mb;
  snap.envd_version = entry->record.envd_version;
  snap.env_vars = entry->record.env_vars;
  snap.created_at = clock_.now();
  const std::string dir = snapshot_dir(snap.id);
  const std::string partial = dir + ".partial";
  co_await capture(id, partial);
  std::error_code ec;
  std::filesystem::rename(partial, dir, ec);
  if (ec) {
    std::filesystem::remove_all(partial, ec);
    throw LifecycleError(LifecycleErrc::internal, "Failed to store the snapshot");
  }
  try {
    store_.insert_snapshot(snap);
  } catch (...) {
    std::filesystem::remove_all(dir, ec);
    throw;
  }
  co_return snap;
}

net::awaitable<Snapshot> SandboxManager::create_snapshot(std::string team_id, std::string id, std::string name) {
  std::vector<std::string> names;
  if (!name.empty()) {
    if (name.size() > 128 || name.find_first_of("/ \t\r\n") != std::string::npos) {
      throw LifecycleError(LifecycleErrc::bad_request, "Invalid snapshot name");
    }
    std::string tagged = name.find(':') == std::string::npos ? name + std::string(kDefaultTag) : name;
    names.push_back(tagged);
  }
  co_return co_await take_snapshot(team_id, id, names);
}

net::awaitable<std::vector<Snapshot>> SandboxManager::list_snapshots(std::string team_id, std::string sandbox_id,
                                                                     std::string name) {
  std::vector<Snapshot> out;
  for (auto& snap : store_.snapshots(team_id == kOperatorTeam ? std::string() : team_id, sandbox_id)) {
    if (!name.empty() && !names_snapshot(snap, name)) continue;
    out.push_back(std::move(snap));
  }
  co_return out;
}

net::awaitable<bool> SandboxManager::delete_snapshot(std::string team_id, std::string id) {
  auto snap = snapshot_for(team_id, id);
  if (!snap) co_return false;
  if (!store_.delete_snapshot(snap->id)) co_return false;
  std::error_code ec;
  std::filesystem::remove_all(snapshot_dir(snap->id), ec);
  co_return true;
}

net::awaitable<std::vector<ForkOutcome>> SandboxManager::fork(std::string team_id, std::string id, int count,
                                                              std::optional<int64_t> timeout_s) {
  if (count < 1 || count > kMaxForks) {
    throw LifecycleError(LifecycleErrc::bad_request, "count must be between 1 and " + std::to_string(kMaxForks));
  }
  if (timeout_s) checked_timeout(*timeout_s);
  Snapshot snap = co_await take_snapshot(team_id, id, {});
  std::vector<ForkOutcome> out;
  for (int i = 0; i < count; ++i) {
    ForkOutcome outcome;
    try {
      CreateRequest request;
      request.template_ref = snap.id;
      request.timeout_s = timeout_s;
      auto source = visible_entry(team_id, id);
      if (source) {
        request.metadata = source->record.metadata;
        request.secure = source->record.secure;
        request.allow_internet_access = source->record.allow_internet_access;
        request.network_json = source->record.network_json;
      }
      outcome.sandbox = co_await create(team_id, request);
    } catch (const LifecycleError& e) {
      outcome.error_code = e.status();
      outcome.error_message = e.what();
    } catch (const std::exception& e) {
      outcome.error_code = 500;
      outcome.error_message = "Failed to start the fork";
      log_line("fork " + id + ": " + e.what());
    }
    out.push_back(std::move(outcome));
  }
  // The children have copied what they need (their disks; the images are read at restore).
  store_.delete_snapshot(snap.id);
  std::error_code ec;
  std::filesystem::remove_all(snapshot_dir(snap.id), ec);
  co_return out;
}

}  // namespace cove::shim
