// The reaper's choices (timeout → kill or pause, warm → cold, retention) and crash recovery: for
// every state a shim can die in, what the sandbox becomes given what the host still holds.
#include "lifecycle/pause_policy.hpp"

#include <gtest/gtest.h>

namespace cove::shim {
namespace {
using namespace std::chrono_literals;
using S = SandboxState;
using K = PauseKind;

const TimePoint kNow = TimePoint(std::chrono::seconds(1764500000));

SandboxRecord record(S state, K kind = K::none) {
  SandboxRecord r;
  r.id = "sbx";
  r.state = state;
  r.paused_as = kind;
  r.end_at = kNow + 60s;
  r.paused_at = kNow - 10s;
  return r;
}

PauseSettings settings() {
  PauseSettings s;
  s.cold_after = 300s;
  s.retention = 3600s;
  return s;
}

TEST(ReaperAction, RunningBeforeItsEndIsLeftAlone) {
  EXPECT_EQ(reaper_action(record(S::running), kNow, settings()), ReaperAction::none);
}

TEST(ReaperAction, ExpiredIsKilledUnlessItAskedToPause) {
  auto r = record(S::running);
  r.end_at = kNow;
  EXPECT_EQ(reaper_action(r, kNow, settings()), ReaperAction::kill);
  r.auto_pause = true;
  EXPECT_EQ(reaper_action(r, kNow, settings()), ReaperAction::pause_warm);
  r.auto_pause_memory = false;
  EXPECT_EQ(reaper_action(r, kNow, settings()), ReaperAction::pause_filesystem);
}

TEST(ReaperAction, TransitionalStatesAreNotTouched) {
  for (S s : {S::creating, S::pausing, S::resuming, S::killing, S::killed}) {
    auto r = record(s, K::warm);
    r.end_at = kNow - 1h;
    r.paused_at = kNow - 48h;
    EXPECT_EQ(reaper_action(r, kNow, settings()), ReaperAction::none) << to_string(s);
  }
}

TEST(ReaperAction, WarmPauseGoesColdAfterTheDelay) {
  auto r = record(S::paused, K::warm);
  r.paused_at = kNow - 299s;
  EXPECT_EQ(reaper_action(r, kNow, settings()), ReaperAction::none);
  r.paused_at = kNow - 300s;
  EXPECT_EQ(reaper_action(r, kNow, settings()), ReaperAction::make_cold);
  // Only a warm pause has memory to move.
  for (K k : {K::cold, K::filesystem}) {
    r.paused_as = k;
    EXPECT_EQ(reaper_action(r, kNow, settings()), ReaperAction::none);
  }
}

TEST(ReaperAction, ZeroDelayMeansColdAtOnce) {
  auto s = settings();
  s.cold_after = 0s;
  auto r = record(S::paused, K::warm);
  r.paused_at = kNow;
  EXPECT_EQ(reaper_action(r, kNow, s), ReaperAction::make_cold);
}

TEST(ReaperAction, RetentionKillsAnyPausedSandbox) {
  for (K k : {K::warm, K::cold, K::filesystem}) {
    auto r = record(S::paused, k);
    r.paused_at = kNow - 3599s;
    EXPECT_NE(reaper_action(r, kNow, settings()), ReaperAction::kill);
    r.paused_at = kNow - 3600s;
    EXPECT_EQ(reaper_action(r, kNow, settings()), ReaperAction::kill);
  }
}

TEST(ReaperAction, EndAtDoesNotApplyWhilePaused) {
  auto r = record(S::paused, K::cold);
  r.end_at = kNow - 24h;
  EXPECT_EQ(reaper_action(r, kNow, settings()), ReaperAction::none);
}

HostFacts facts(bool alive, bool checkpoint, bool disk) { return HostFacts{alive, checkpoint, disk}; }

void expect_plan(const RecoveryPlan& plan, S state, K kind, bool thaw, bool freeze) {
  EXPECT_EQ(plan.state, state);
  EXPECT_EQ(plan.paused_as, kind);
  EXPECT_EQ(plan.thaw, thaw);
  EXPECT_EQ(plan.freeze, freeze);
}

TEST(PlanRecovery, CreatingAndKillingAreAlwaysLost) {
  for (S s : {S::creating, S::killing}) {
    expect_plan(plan_recovery(record(s), facts(true, true, true)), S::killed, K::none, false, false);
  }
}

TEST(PlanRecovery, RunningSurvivesOnlyIfAliveAndIsThawed) {
  // Thawed: a snapshot in flight freezes it without changing its state.
  expect_plan(plan_recovery(record(S::running), facts(true, false, true)), S::running, K::none, true, false);
  expect_plan(plan_recovery(record(S::running), facts(false, false, true)), S::killed, K::none, false, false);
}

TEST(PlanRecovery, InterruptedPauseRunsOnOrKeepsWhatIsOnDisk) {
  for (K k : {K::warm, K::filesystem}) {
    expect_plan(plan_recovery(record(S::pausing, k), facts(true, false, true)), S::running, K::none, true, false);
    // Its processes are gone (host reboot, or a filesystem pause that had ended them): files stay.
    expect_plan(plan_recovery(record(S::pausing, k), facts(false, false, true)), S::paused, K::filesystem, false,
                false);
    expect_plan(plan_recovery(record(S::pausing, k), facts(false, false, false)), S::killed, K::none, false, false);
  }
}

TEST(PlanRecovery, WarmPauseStaysWarmWhileItsProcessesLive) {
  expect_plan(plan_recovery(record(S::paused, K::warm), facts(true, false, true)), S::paused, K::warm, false, true);
}

TEST(PlanRecovery, ColdConversionCutShortIsStillWarm) {
  // The checkpoint was not published, the processes were not released: nothing lost.
  expect_plan(plan_recovery(record(S::paused, K::warm), facts(true, false, true)), S::paused, K::warm, false, true);
  // Published but the store not yet told: the checkpoint counts.
  expect_plan(plan_recovery(record(S::paused, K::warm), facts(false, true, true)), S::paused, K::cold, false, false);
}

TEST(PlanRecovery, ColdPauseSurvivesARebootWithItsCheckpoint) {
  expect_plan(plan_recovery(record(S::paused, K::cold), facts(false, true, true)), S::paused, K::cold, false, false);
  // Checkpoint gone but the disk kept: the files are not lost.
  expect_plan(plan_recovery(record(S::paused, K::cold), facts(false, false, true)), S::paused, K::filesystem, false,
              false);
  // A checkpoint without its disk is useless.
  expect_plan(plan_recovery(record(S::paused, K::cold), facts(false, true, false)), S::killed, K::none, false, false);
}

TEST(PlanRecovery, WarmPauseAfterAHostRebootKeepsItsFiles) {
  expect_plan(plan_recovery(record(S::paused, K::warm), facts(false, false, true)), S::paused, K::filesystem, false,
              false);
}

TEST(PlanRecovery, FilesystemPauseNeedsOnlyItsDisk) {
  expect_plan(plan_recovery(record(S::paused, K::filesystem), facts(false, false, true)), S::paused, K::filesystem,
              false, false);
  expect_plan(plan_recovery(record(S::paused, K::filesystem), facts(false, false, false)), S::killed, K::none, false,
              false);
}

TEST(PlanRecovery, InterruptedResume) {
  // Restored (or thawed) already: it runs.
  expect_plan(plan_recovery(record(S::resuming, K::cold), facts(true, true, true)), S::running, K::none, true, false);
  // Not yet: back to the pause it came from.
  expect_plan(plan_recovery(record(S::resuming, K::cold), facts(false, true, true)), S::paused, K::cold, false, false);
  expect_plan(plan_recovery(record(S::resuming, K::filesystem), facts(false, false, true)), S::paused, K::filesystem,
              false, false);
}

}  // namespace
}  // namespace cove::shim
