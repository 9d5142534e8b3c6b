#include "store/records.hpp"

#include <array>
#include <utility>

namespace cove::shim {
namespace {
constexpr std::array<std::pair<SandboxState, std::string_view>, 7> kStateNames{{
    {SandboxState::creating, "creating"},
    {SandboxState::running, "running"},
    {SandboxState::pausing, "pausing"},
    {SandboxState::paused, "paused"},
    {SandboxState::resuming, "resuming"},
    {SandboxState::killing, "killing"},
    {SandboxState::killed, "killed"},
}};
constexpr std::array<std::pair<BuildStatus, std::string_view>, 4> kBuildStatusNames{{
    {BuildStatus::waiting, "waiting"},
    {BuildStatus::building, "building"},
    {BuildStatus::ready, "ready"},
    {BuildStatus::error, "error"},
}};
constexpr std::array<std::pair<PauseKind, std::string_view>, 4> kPauseKindNames{{
    {PauseKind::none, ""},
    {PauseKind::warm, "warm"},
    {PauseKind::cold, "cold"},
    {PauseKind::filesystem, "filesystem"},
}};
}  // namespace

std::string_view to_string(PauseKind kind) {
  for (auto& [k, name] : kPauseKindNames) {
    if (k == kind) return name;
  }
  return "";
}

std::optional<PauseKind> parse_pause_kind(std::string_view text) {
  for (auto& [k, name] : kPauseKindNames) {
    if (name == text) return k;
  }
  return std::nullopt;
}

std::string_view to_string(SandboxState state) {
  for (auto& [s, name] : kStateNames) {
    if (s == state) return name;
  }
  return "unknown";
}

std::optional<SandboxState> parse_sandbox_state(std::string_view text) {
  for (auto& [s, name] : kStateNames) {
    if (name == text) return s;
  }
  return std::nullopt;
}

std::string_view to_string(BuildStatus status) {
  for (auto& [s, name] : kBuildStatusNames) {
    if (s == status) return name;
  }
  return "unknown";
}

std::optional<BuildStatus> parse_build_status(std::string_view text) {
  for (auto& [s, name] : kBuildStatusNames) {
    if (name == text) return s;
  }
  return std::nullopt;
}

}  // namespace cove::shim
