#include "api/template_requests.hpp"

#include "api/errors.hpp"
#include "api/timestamps.hpp"

namespace cove::shim::api {
namespace {
using nlohmann::json;

json parse_object(std::string_view body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception&) {
    throw bad_request("Request body is not valid JSON");
  }
  if (!j.is_object()) throw bad_request("Request body must be a JSON object");
  return j;
}

std::string string_field(const json& j, const char* key, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) throw bad_request(std::string("'") + key + "' is required");
    return {};
  }
  if (!j[key].is_string()) throw bad_request(std::string("'") + key + "' must be a string");
  return j[key].get<std::string>();
}

std::vector<std::string> string_list(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_array()) throw bad_request(std::string("'") + key + "' must be an array of strings");
  for (const auto& v : j[key]) {
    if (!v.is_string()) throw bad_request(std::string("'") + key + "' must be an array of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::optional<int> int_field(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number_integer()) throw bad_request(std::string("'") + key + "' must be an integer");
  auto v = j[key].get<int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) throw bad_request(std::string("'") + key + "' is out of range");
  return static_cast<int>(v);
}

}  // namespace

TemplateRegistration parse_template_registration(std::string_view body) {
  json j = parse_object(body);
  TemplateRegistration reg;
  reg.name = string_field(j, "name", false);
  if (reg.name.empty()) reg.name = string_field(j, "alias", false);  // the v2 request's spelling
  if (reg.name.empty()) throw bad_request("'name' is required");
  reg.tags = string_list(j, "tags");
  reg.cpu_count = int_field(j, "cpuCount");
  reg.memory_mb = int_field(j, "memoryMB");
  return reg;
}

std::pair<std::string, std::vector<std::string>> parse_tags_assignment(std::string_view body) {
  json j = parse_object(body);
  return {string_field(j, "target", true), string_list(j, "tags")};
}

std::pair<std::string, std::vector<std::string>> parse_tags_removal(std::string_view body) {
  json j = parse_object(body);
  return {string_field(j, "name", true), string_list(j, "tags")};
}

json registered_build_json(const RegisteredBuild& b) {
  return json{{"templateID", b.template_id}, {"buildID", b.build_id}, {"names", b.names},
              {"aliases", b.names},          {"tags", b.tags},         {"public", b.is_public}};
}

json build_status_json(const BuildStatusPage& page) {
  json entries = json::array();
  json lines = json::array();
  for (const auto& e : page.entries) {
    json entry{{"timestamp", format_rfc3339(e.timestamp)}, {"level", e.level}, {"message", e.message}};
    if (!e.step.empty()) entry["step"] = e.step;
    entries.push_back(std::move(entry));
    lines.push_back(e.message);
  }
  json out{{"templateID", page.template_id},
           {"buildID", page.build_id},
           {"status", std::string(to_string(page.status))},
           {"logEntries", std::move(entries)},
           {"logs", std::move(lines)}};
  if (page.status == BuildStatus::error) {
    json reason{{"message", page.reason}};
    if (!page.reason_step.empty()) reason["step"] = page.reason_step;
    out["reason"] = std::move(reason);
  }
  return out;
}

json template_tags_json(const std::vector<TemplateTag>& tags) {
  json out = json::array();
  for (const auto& t : tags) {
    out.push_back({{"tag", t.tag}, {"buildID", t.build_id}, {"createdAt", format_rfc3339(t.created_at)}});
  }
  return out;
}

}  // namespace cove::shim::api
