#include "runtime/container/instance.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <charconv>
#include <stdexcept>

#include "runtime/container/host_files.hpp"

namespace cove::shim::container {

using nlohmann::json;

std::string to_json(const InstanceRecord& r) {
  json j = {{"id", r.id},
            {"slot", r.slot},
            {"pid", r.pid},
            {"start_time", r.start_time},
            {"loop", r.loop},
            {"internet", r.internet},
            {"cpu_count", r.cpu_count},
            {"layers", r.layers},
            {"changes_dir", r.changes_dir},
            {"id_base", r.id_base},
            {"id_count", r.id_count},
            {"cgroups",
             {{"v2", r.cgroups.v2},
              {"unified", r.cgroups.unified},
              {"memory", r.cgroups.memory},
              {"cpu", r.cgroups.cpu},
              {"cpuacct", r.cgroups.cpuacct},
              {"pids", r.cgroups.pids},
              {"freezer", r.cgroups.freezer}}}};
  return j.dump();
}

InstanceRecord instance_from_json(std::string_view text) {
  try {
    json j = json::parse(text);
    InstanceRecord r;
    j.at("id").get_to(r.id);
    j.at("slot").get_to(r.slot);
    j.at("pid").get_to(r.pid);
    j.at("start_time").get_to(r.start_time);
    j.at("loop").get_to(r.loop);
    j.at("internet").get_to(r.internet);
    j.at("cpu_count").get_to(r.cpu_count);
    j.at("layers").get_to(r.layers);
    r.changes_dir = j.value("changes_dir", "");
    r.id_base = j.value("id_base", 0u);
    r.id_count = j.value("id_count", 0u);
    const json& c = j.at("cgroups");
    c.at("v2").get_to(r.cgroups.v2);
    c.at("unified").get_to(r.cgroups.unified);
    c.at("memory").get_to(r.cgroups.memory);
    c.at("cpu").get_to(r.cgroups.cpu);
    c.at("cpuacct").get_to(r.cgroups.cpuacct);
    c.at("pids").get_to(r.cgroups.pids);
    c.at("freezer").get_to(r.cgroups.freezer);
    return r;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("instance record: ") + e.what());
  }
}

void save_instance(const std::string& path, const InstanceRecord& record) {
  std::string tmp = path + ".tmp";
  std::string text = to_json(record);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("write instance record");
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) throw_errno("write instance record");
}

std::optional<InstanceRecord> load_instance(const std::string& path) {
  std::string text;
  if (!try_read_text(path, text)) return std::nullopt;
  try {
    return instance_from_json(text);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::optional<uint64_t> parse_stat_start_time(std::string_view stat) {
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(close_paren + 1);
  // After "pid (comm)" come fields 3, 4, …; starttime is field 22, the 20th of them.
  int field = 2;
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    size_t start = i;
    while (i < rest.size() && rest[i] != ' ' && rest[i] != '\n') ++i;
    if (start == i) break;
    if (++field == 22) {
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(rest.data() + start, rest.data() + i, v);
      if (ec != std::errc() || p != rest.data() + i) return std::nullopt;
      return v;
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> process_start_time(pid_t pid) {
  std::string text;
  if (pid <= 0 || !try_read_text("/proc/" + std::to_string(pid) + "/stat", text)) return std::nullopt;
  return parse_stat_start_time(text);
}

}  // namespace cove::shim::container
