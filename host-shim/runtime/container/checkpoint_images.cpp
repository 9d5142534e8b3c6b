#include "runtime/container/checkpoint_images.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <stdexcept>

#include "runtime/container/host_files.hpp"

namespace cove::shim::container {

using nlohmann::json;

std::string to_json(const CheckpointInfo& info) {
  return json{{"version", info.version},
              {"id_base", info.id_base},
              {"id_count", info.id_count},
              {"stdout_key", info.stdout_key}}
      .dump();
}

CheckpointInfo checkpoint_info_from_json(std::string_view text) {
  try {
    json j = json::parse(text);
    CheckpointInfo info;
    j.at("version").get_to(info.version);
    j.at("id_base").get_to(info.id_base);
    j.at("id_count").get_to(info.id_count);
    j.at("stdout_key").get_to(info.stdout_key);
    if (info.version != 1) throw std::invalid_argument("checkpoint: unknown version");
    if (info.id_count == 0) throw std::invalid_argument("checkpoint: empty id range");
    return info;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("checkpoint: ") + e.what());
  }
}

void save_checkpoint_info(const std::string& dir, const CheckpointInfo& info) {
  std::string path = dir + "/" + std::string(kCheckpointInfoFile);
  std::string tmp = path + ".tmp";
  std::string text = to_json(info);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("write checkpoint info");
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) throw_errno("write checkpoint info");
}

std::optional<CheckpointInfo> load_checkpoint_info(const std::string& dir) {
  std::string text;
  if (!try_read_text(dir + "/" + std::string(kCheckpointInfoFile), text)) return std::nullopt;
  try {
    return checkpoint_info_from_json(text);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

}  // namespace cove::shim::container
