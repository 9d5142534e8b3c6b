#pragma once
// What a checkpoint directory holds besides CRIU's images: cove-checkpoint.json, what a restore
// needs to know about the dumped sandbox (a restore may happen in another sandbox, after a shim
// restart): the host id range its user namespace maps (the images carry that mapping, so the
// restored sandbox keeps it) and the key of the agent's log as an external file.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cove::shim::container {

struct CheckpointInfo {
  int version = 1;
  uint32_t id_base = 0;
  uint32_t id_count = 0;
  std::string stdout_key;   // criu_external_file_key of the agent's stdout at dump time
};

inline constexpr std::string_view kCheckpointInfoFile = "cove-checkpoint.json";
inline constexpr std::string_view kDumpLogFile = "dump.log";

std::string to_json(const CheckpointInfo& info);
// Throws std::invalid_argument.
CheckpointInfo checkpoint_info_from_json(std::string_view text);

// Written last (by rename), so a directory with this file holds a complete checkpoint.
void save_checkpoint_info(const std::string& dir, const CheckpointInfo& info);
// nullopt if absent or unreadable (not a complete checkpoint).
std::optional<CheckpointInfo> load_checkpoint_info(const std::string& dir);

}  // namespace cove::shim::container
