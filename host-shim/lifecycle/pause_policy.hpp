#pragma once
// The decisions of pausing as pure functions, so the reaper's choices and crash recovery are
// unit-tested without processes or time: what the reaper does with a sandbox now, and what a
// sandbox found in the store after a restart becomes given what the host still holds.
#include <chrono>

#include "store/records.hpp"

namespace cove::shim {

struct PauseSettings {
  std::chrono::seconds cold_after{300};            // a warm pause is checkpointed to disk after this
  std::chrono::seconds retention{30 * 24 * 3600};  // a paused sandbox is killed after this
  std::chrono::seconds auto_resume_timeout{300};   // the lifetime a resume by traffic grants
};

enum class ReaperAction { none, kill, pause_warm, pause_filesystem, make_cold };

ReaperAction reaper_action(const SandboxRecord& record, TimePoint now, const PauseSettings& settings);

// What the host still has of a sandbox after a shim restart.
struct HostFacts {
  bool alive = false;           // its processes run (possibly frozen) and were re-attached
  bool has_checkpoint = false;  // a complete checkpoint of it is on disk
  bool has_disk = false;        // its instance (writable disk) is still on this host
};

struct RecoveryPlan {
  SandboxState state = SandboxState::killed;  // killed: lost, tear down what is left
  PauseKind paused_as = PauseKind::none;
  bool thaw = false;                          // alive but possibly left frozen: thaw it
  bool freeze = false;                        // alive and meant to be paused: make sure it is frozen
};

RecoveryPlan plan_recovery(const SandboxRecord& record, const HostFacts& facts);

}  // namespace cove::shim
