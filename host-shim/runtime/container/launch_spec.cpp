#include "runtime/container/launch_spec.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <stdexcept>

namespace cove::shim::container {

using nlohmann::json;

std::string to_json(const LaunchSpec& s) {
  json j = {
      {"id", s.id},
      {"sandbox_dir", s.sandbox_dir},
      {"layers", s.layers},
      {"id_base", s.id_base},
      {"id_count", s.id_count},
      {"cgroups",
       {{"v2", s.cgroups.v2},
        {"unified", s.cgroups.unified},
        {"memory", s.cgroups.memory},
        {"cpu", s.cgroups.cpu},
        {"cpuacct", s.cgroups.cpuacct},
        {"pids", s.cgroups.pids},
        {"freezer", s.cgroups.freezer}}},
      {"limits",
       {{"memory_bytes", s.limits.memory_bytes},
        {"cpu_quota_us", s.limits.cpu_quota_us},
        {"cpu_period_us", s.limits.cpu_period_us},
        {"pids_max", s.limits.pids_max}}},
      {"internet", s.internet},
      {"slot", s.slot},
      {"bridge", s.bridge},
      {"subnet", s.subnet},
      {"address", s.address},
      {"gateway", s.gateway},
      {"prefix_length", s.prefix_length},
      {"agent_path", s.agent_path},
      {"agent_port", s.agent_port},
      {"agent_socket", s.agent_socket},
      {"changes_dir", s.changes_dir},
      {"checkpoint_dir", s.checkpoint_dir},
      {"criu_path", s.criu_path},
      {"stdout_key", s.stdout_key},
  };
  return j.dump();
}

LaunchSpec launch_spec_from_json(std::string_view text) {
  try {
    json j = json::parse(text);
    LaunchSpec s;
    j.at("id").get_to(s.id);
    j.at("sandbox_dir").get_to(s.sandbox_dir);
    j.at("layers").get_to(s.layers);
    j.at("id_base").get_to(s.id_base);
    j.at("id_count").get_to(s.id_count);
    const json& c = j.at("cgroups");
    c.at("v2").get_to(s.cgroups.v2);
    c.at("unified").get_to(s.cgroups.unified);
    c.at("memory").get_to(s.cgroups.memory);
    c.at("cpu").get_to(s.cgroups.cpu);
    c.at("cpuacct").get_to(s.cgroups.cpuacct);
    c.at("pids").get_to(s.cgroups.pids);
    c.at("freezer").get_to(s.cgroups.freezer);
    const json& l = j.at("limits");
    l.at("memory_bytes").get_to(s.limits.memory_bytes);
    l.at("cpu_quota_us").get_to(s.limits.cpu_quota_us);
    l.at("cpu_period_us").get_to(s.limits.cpu_period_us);
    l.at("pids_max").get_to(s.limits.pids_max);
    j.at("internet").get_to(s.internet);
    j.at("slot").get_to(s.slot);
    j.at("bridge").get_to(s.bridge);
    j.at("subnet").get_to(s.subnet);
    j.at("address").get_to(s.address);
    j.at("gateway").get_to(s.gateway);
    j.at("prefix_length").get_to(s.prefix_length);
    j.at("agent_path").get_to(s.agent_path);
    j.at("agent_port").get_to(s.agent_port);
    j.at("agent_socket").get_to(s.agent_socket);
    s.changes_dir = j.value("changes_dir", "");
    s.checkpoint_dir = j.value("checkpoint_dir", "");
    s.criu_path = j.value("criu_path", "");
    s.stdout_key = j.value("stdout_key", "");
    if (!s.checkpoint_dir.empty() && s.criu_path.empty()) {
      throw std::invalid_argument("launch spec: a restore needs criu_path");
    }
    if (s.id.empty() || s.sandbox_dir.empty() || s.layers.empty() || s.id_count == 0) {
      throw std::invalid_argument("launch spec: id, sandbox_dir, layers and id_count are required");
    }
    return s;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("launch spec: ") + e.what());
  }
}

std::string format_launch_ok(pid_t pid, int loop) {
  return "OK " + std::to_string(pid) + " " + std::to_string(loop) + "\n";
}

std::string format_launch_error(std::string_view message) {
  std::string line = "ERROR ";
  for (char c : message) line.push_back(c == '\n' ? ' ' : c);
  return line + "\n";
}

std::string format_launch_restoring(int loop) { return "RESTORING " + std::to_string(loop) + "\n"; }

std::optional<LaunchReport> parse_launch_report(std::string_view line) {
  if (line.empty() || line.back() != '\n') return std::nullopt;
  line.remove_suffix(1);
  LaunchReport r;
  if (line.substr(0, 10) == "RESTORING ") {
    line.remove_prefix(10);
    auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), r.loop);
    if (ec != std::errc() || p != line.data() + line.size() || line.empty() || r.loop < -1) return std::nullopt;
    r.ok = true;
    r.restoring = true;
    return r;
  }
  if (line.substr(0, 6) == "ERROR ") {
    r.error = std::string(line.substr(6));
    return r;
  }
  if (line.substr(0, 3) != "OK ") return std::nullopt;
  line.remove_prefix(3);
  const char* end = line.data() + line.size();
  auto [p1, e1] = std::from_chars(line.data(), end, r.pid);
  if (e1 != std::errc() || r.pid <= 0 || p1 == end || *p1 != ' ') return std::nullopt;
  auto [p2, e2] = std::from_chars(p1 + 1, end, r.loop);
  if (e2 != std::errc() || p2 != end || r.loop < -1) return std::nullopt;  // -1: no disk (a build)
  r.ok = true;
  return r;
}

}  // namespace cove::shim::container
