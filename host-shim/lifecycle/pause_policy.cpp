#include "lifecycle/pause_policy.hpp"

namespace cove::shim {

ReaperAction reaper_action(const SandboxRecord& record, TimePoint now, const PauseSettings& settings) {
  if (record.state == SandboxState::running && record.end_at <= now) {
    if (!record.auto_pause) return ReaperAction::kill;
    return record.auto_pause_memory ? ReaperAction::pause_warm : ReaperAction::pause_filesystem;
  }
  if (record.state == SandboxState::paused) {
    if (record.paused_at + settings.retention <= now) return ReaperAction::kill;
    if (record.paused_as == PauseKind::warm && record.paused_at + settings.cold_after <= now) {
      return ReaperAction::make_cold;
    }
  }
  return ReaperAction::none;
}

namespace {
RecoveryPlan running(bool thaw) { return {SandboxState::running, PauseKind::none, thaw, false}; }
RecoveryPlan paused(PauseKind kind) { return {SandboxState::paused, kind, false, false}; }
RecoveryPlan lost() { return {}; }

// Nothing runs any more: the best state the files on disk still support. A checkpoint beats a
// bare disk; a bare disk beats losing the user's files.
RecoveryPlan from_disk(const HostFacts& facts) {
  if (facts.has_checkpoint && facts.has_disk) return paused(PauseKind::cold);
  if (facts.has_disk) return paused(PauseKind::filesystem);
  return lost();
}
}  // namespace

RecoveryPlan plan_recovery(const SandboxRecord& record, const HostFacts& facts) {
  switch (record.state) {
    case SandboxState::creating:
    case SandboxState::killing:
    case SandboxState::killed:
      return lost();
    case SandboxState::running:
      // A snapshot in flight freezes a running sandbox without changing its state.
      return facts.alive ? running(true) : lost();
    case SandboxState::pausing:
      // Abandoned half-way: the processes are still there, so it goes on running.
      if (facts.alive) return running(true);
      return from_disk(facts);
    case SandboxState::paused:
      // Alive: a warm pause, or a cold one that had not finished (its processes still there).
      if (facts.alive) return {SandboxState::paused, PauseKind::warm, false, true};
      return from_disk(facts);
    case SandboxState::resuming:
      if (facts.alive) return running(true);
      return from_disk(facts);
  }
  return lost();
}

}  // namespace cove::shim
