#include <gtest/gtest.h>

#include "store/records.hpp"

namespace cove::shim {

TEST(SandboxState, NamesRoundTrip) {
  for (auto s : {SandboxState::creating, SandboxState::running, SandboxState::pausing, SandboxState::paused,
                 SandboxState::resuming, SandboxState::killing, SandboxState::killed}) {
    EXPECT_EQ(parse_sandbox_state(to_string(s)), s);
  }
  EXPECT_EQ(parse_sandbox_state("Running"), std::nullopt);
}

}  // namespace cove::shim
