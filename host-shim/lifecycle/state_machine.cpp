#include "lifecycle/state_machine.hpp"

namespace cove::shim {

std::optional<SandboxState> next_state(SandboxState state, SandboxEvent event) {
  using S = SandboxState;
  using E = SandboxEvent;
  switch (state) {
    case S::creating:
      if (event == E::ready) return S::running;
      if (event == E::kill || event == E::exited) return S::killing;
      if (event == E::failed) return S::killed;
      return std::nullopt;
    case S::running:
      if (event == E::kill || event == E::exited) return S::killing;
      if (event == E::pause) return S::pausing;
      return std::nullopt;
    case S::pausing:
      if (event == E::paused) return S::paused;
      if (event == E::failed) return S::running;  // the pause was abandoned; it still runs
      if (event == E::kill || event == E::exited) return S::killing;
      return std::nullopt;
    case S::paused:
      if (event == E::resume) return S::resuming;
      if (event == E::kill) return S::killing;
      return std::nullopt;
    case S::resuming:
      if (event == E::resumed) return S::running;
      if (event == E::failed) return S::paused;
      if (event == E::kill || event == E::exited) return S::killing;
      return std::nullopt;
    case S::killing:
      if (event == E::torn_down) return S::killed;
      return std::nullopt;
    case S::killed:
      return std::nullopt;
  }
  return std::nullopt;
}

bool is_live(SandboxState state) { return state != SandboxState::killing && state != SandboxState::killed; }

}  // namespace cove::shim
