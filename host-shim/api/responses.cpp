#include "api/responses.hpp"

#include "api/timestamps.hpp"

namespace cove::shim::api {
namespace {
using nlohmann::json;

json nullable(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

json domain_of(const SandboxView& view, const ResponseContext& context) {
  return nullable(view.domain.empty() ? context.domain : view.domain);
}

json string_map(const std::map<std::string, std::string>& map) {
  json out = json::object();
  for (const auto& [k, v] : map) out[k] = v;
  return out;
}

// The fields SandboxDetail and ListedSandbox share.
json listed_fields(const SandboxView& view, const ResponseContext& context) {
  const SandboxRecord& r = view.record;
  json out{
      {"sandboxID", r.id},
      {"templateID", r.template_id},
      {"clientID", context.client_id},
      {"startedAt", format_rfc3339(r.started_at)},
      {"endAt", format_rfc3339(r.end_at)},
      {"state", wire_state(r.state)},
      {"cpuCount", r.cpu_count},
      {"memoryMB", r.memory_mb},
      {"diskSizeMB", r.disk_size_mb},
      {"envdVersion", r.envd_version},
      {"metadata", string_map(r.metadata)},
      {"volumeMounts", json::array()},
  };
  if (!r.alias.empty()) out["alias"] = r.alias;
  return out;
}
}  // namespace

std::string_view wire_state(SandboxState state) {
  switch (state) {
    case SandboxState::pausing:
    case SandboxState::paused:
      return "paused";
    default:
      return "running";
  }
}

json sandbox_json(const SandboxView& view, const ResponseContext& context) {
  const SandboxRecord& r = view.record;
  json out{
      {"sandboxID", r.id},
      {"templateID", r.template_id},
      {"clientID", context.client_id},
      {"envdVersion", r.envd_version},
      {"trafficAccessToken", nullable(view.traffic_access_token)},
      {"domain", domain_of(view, context)},
  };
  if (!r.alias.empty()) out["alias"] = r.alias;
  if (!view.envd_access_token.empty()) out["envdAccessToken"] = view.envd_access_token;
  return out;
}

json sandbox_detail_json(const SandboxView& view, const ResponseContext& context) {
  const SandboxRecord& r = view.record;
  json out = listed_fields(view, context);
  out["allowInternetAccess"] = r.allow_internet_access;
  out["lifecycle"] = json{{"onTimeout", r.auto_pause ? "pause" : "kill"}, {"autoResume", r.auto_resume}};
  out["domain"] = domain_of(view, context);
  if (!view.envd_access_token.empty()) out["envdAccessToken"] = view.envd_access_token;
  // The create request's `network`, as given; a stored value that no longer parses is left out
  // rather than failing the whole response.
  json network = json::parse(r.network_json, nullptr, false);
  if (!network.is_discarded() && network.is_object()) out["network"] = std::move(network);
  return out;
}

json listed_sandbox_json(const SandboxView& view, const ResponseContext& context) {
  return listed_fields(view, context);
}

json metric_json(const MetricSample& s) {
  return json{
      {"timestamp", format_rfc3339(s.timestamp)},
      {"timestampUnix", unix_seconds(s.timestamp)},
      {"cpuCount", s.cpu_count},
      {"cpuUsedPct", s.cpu_used_pct},
      {"memUsed", s.mem_used},
      {"memTotal", s.mem_total},
      {"memCache", 0},  // required by the schema; the sampler does not separate the page cache
      {"diskUsed", s.disk_used},
      {"diskTotal", s.disk_total},
  };
}

json template_json(const Template& t) {
  return json{
      {"templateID", t.id},
      {"buildID", t.build_id},
      {"cpuCount", t.cpu_count},
      {"memoryMB", t.memory_mb},
      {"diskSizeMB", t.disk_size_mb},
      {"public", t.is_public},
      {"aliases", t.aliases},
      {"names", t.aliases},
      {"createdAt", format_rfc3339(t.created_at)},
      {"updatedAt", format_rfc3339(t.updated_at)},
      {"createdBy", nullptr},
      {"lastSpawnedAt", nullptr},
      {"spawnCount", 0},
      {"buildCount", 1},
      // A template is listed with the build it starts; registered but never built → waiting.
      {"buildStatus", t.build_id.empty() ? "waiting" : "ready"},
      {"envdVersion", t.envd_version},
  };
}

json template_alias_json(const Template& t) { return json{{"templateID", t.id}, {"public", t.is_public}}; }

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

json snapshot_info_json(const Snapshot& snapshot) {
  return json{{"snapshotID", snapshot.id}, {"names", snapshot.names}};
}

}  // namespace cove::shim::api
