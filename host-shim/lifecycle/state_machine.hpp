#pragma once
// The sandbox state machine as a pure function, so every transition is unit-tested without
// processes or time. The manager applies it and bumps the record's generation on every change.
#include <optional>

#include "store/records.hpp"

namespace cove::shim {

enum class SandboxEvent {
  ready,     // the agent answered /init and /health
  kill,      // a user, the reaper or the operator asked for it to go
  torn_down, // the runtime removed every trace of it
  failed,    // start failed (the runtime cleaned up after itself)
  exited,    // its init died by itself
  pause,
  paused,
  resume,
  resumed,
};

// nullopt: the event is not allowed in that state (the caller reports a conflict or ignores it).
std::optional<SandboxState> next_state(SandboxState state, SandboxEvent event);

// States in which a sandbox counts as alive (listed, routable or about to be).
bool is_live(SandboxState state);

}  // namespace cove::shim
