#include "lifecycle/state_machine.hpp"

#include <gtest/gtest.h>

namespace cove::shim {
namespace {
using S = SandboxState;
using E = SandboxEvent;

TEST(StateMachine, HappyPathCreateRunKill) {
  EXPECT_EQ(next_state(S::creating, E::ready), S::running);
  EXPECT_EQ(next_state(S::running, E::kill), S::killing);
  EXPECT_EQ(next_state(S::killing, E::torn_down), S::killed);
}

TEST(StateMachine, KillWhileCreatingGoesThroughKilling) {
  EXPECT_EQ(next_state(S::creating, E::kill), S::killing);
  EXPECT_EQ(next_state(S::creating, E::failed), S::killed);
  EXPECT_EQ(next_state(S::creating, E::exited), S::killing);
}

TEST(StateMachine, SecondKillIsRefused) {
  EXPECT_EQ(next_state(S::killing, E::kill), std::nullopt);
  EXPECT_EQ(next_state(S::killed, E::kill), std::nullopt);
  EXPECT_EQ(next_state(S::killing, E::exited), std::nullopt);
}

TEST(StateMachine, KilledIsFinal) {
  for (auto e : {E::ready, E::kill, E::torn_down, E::failed, E::exited, E::pause, E::paused, E::resume, E::resumed}) {
    EXPECT_EQ(next_state(S::killed, e), std::nullopt);
  }
}

TEST(StateMachine, PauseResumeCycle) {
  EXPECT_EQ(next_state(S::running, E::pause), S::pausing);
  EXPECT_EQ(next_state(S::pausing, E::paused), S::paused);
  EXPECT_EQ(next_state(S::paused, E::resume), S::resuming);
  EXPECT_EQ(next_state(S::resuming, E::resumed), S::running);
  EXPECT_EQ(next_state(S::pausing, E::failed), S::running);
  EXPECT_EQ(next_state(S::resuming, E::failed), S::paused);
  EXPECT_EQ(next_state(S::paused, E::kill), S::killing);
  EXPECT_EQ(next_state(S::paused, E::exited), std::nullopt);  // nothing runs while paused
}

TEST(StateMachine, ReadyOnlyFromCreating) {
  for (auto s : {S::running, S::pausing, S::paused, S::resuming, S::killing, S::killed}) {
    EXPECT_EQ(next_state(s, E::ready), std::nullopt) << to_string(s);
  }
}

TEST(StateMachine, Liveness) {
  EXPECT_TRUE(is_live(S::creating));
  EXPECT_TRUE(is_live(S::running));
  EXPECT_TRUE(is_live(S::paused));
  EXPECT_FALSE(is_live(S::killing));
  EXPECT_FALSE(is_live(S::killed));
}

}  // namespace
}  // namespace cove::shim
