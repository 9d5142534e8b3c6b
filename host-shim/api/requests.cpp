#include "api/requests.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include "api/errors.hpp"
#include "api/metadata_filter.hpp"

namespace cove::shim::api {
namespace {
using nlohmann::json;

constexpr size_t kMaxJsonDepth = 64;
constexpr size_t kMaxSandboxIds = 100;

ApiError parse_error(const std::string& what) { return bad_request("Error when parsing request: " + what); }

// Deeper nesting than any E2B body has is refused before parsing: a small body could otherwise
// nest a million levels.
bool nesting_within(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return false;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return true;
}

bool blank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// The body as a JSON object; an empty body is `{}` when `optional`, else an error.
json parse_object(std::string_view body, bool optional) {
  if (blank(body)) {
    if (optional) return json::object();
    throw parse_error("request body is required");
  }
  if (!nesting_within(body, kMaxJsonDepth)) throw parse_error("JSON nested too deeply");
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw parse_error("invalid JSON");
  if (!doc.is_object()) throw parse_error("the body must be a JSON object");
  return doc;
}

// A present, non-null member (Go treats `null` as absent).
const json* member(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

// An integer in [min, int32 max] (E2B's int32 fields), or nullopt if absent.
std::optional<int64_t> int_field(const json& object, const char* name, int64_t min,
                                 int64_t max = std::numeric_limits<int32_t>::max()) {
  const json* v = member(object, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw parse_error("'" + std::string(name) + "' must be an integer");
  const auto out_of_range = [&] {
    return bad_request("'" + std::string(name) + "' must be between " + std::to_string(min) + " and " +
                       std::to_string(max));
  };
  int64_t value = 0;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(max)) throw out_of_range();
    value = static_cast<int64_t>(v->get<uint64_t>());
  } else {
    value = v->get<int64_t>();
  }
  if (value < min || value > max) throw out_of_range();
  return value;
}

std::optional<bool> bool_field(const json& object, const char* name) {
  const json* v = member(object, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw parse_error("'" + std::string(name) + "' must be a boolean");
  return v->get<bool>();
}

std::map<std::string, std::string> string_map_field(const json& object, const char* name) {
  std::map<std::string, std::string> out;
  const json* v = member(object, name);
  if (!v) return out;
  if (!v->is_object()) throw parse_error("'" + std::string(name) + "' must be an object of strings");
  for (const auto& [key, value] : v->items()) {
    if (!value.is_string()) throw parse_error("'" + std::string(name) + "' values must be strings");
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

void require_string_array(const json& object, const char* name, const char* parent) {
  const json* v = member(object, name);
  if (!v) return;
  bool ok = v->is_array();
  for (size_t i = 0; ok && i < v->size(); ++i) ok = (*v)[i].is_string();
  if (!ok) throw parse_error("'" + std::string(parent) + "." + name + "' must be an array of strings");
}

// `network` is stored and echoed; its known members are type-checked so garbage is not echoed back.
std::string network_field(const json& object) {
  const json* v = member(object, "network");
  if (!v) return "null";
  if (!v->is_object()) throw parse_error("'network' must be an object");
  require_string_array(*v, "allowOut", "network");
  require_string_array(*v, "denyOut", "network");
  if (const json* p = member(*v, "allowPublicTraffic"); p && !p->is_boolean()) {
    throw parse_error("'network.allowPublicTraffic' must be a boolean");
  }
  if (const json* m = member(*v, "maskRequestHost"); m && !m->is_string()) {
    throw parse_error("'network.maskRequestHost' must be a string");
  }
  if (const json* r = member(*v, "rules"); r && !r->is_object()) {
    throw parse_error("'network.rules' must be an object");
  }
  if (const json* e = member(*v, "egressProxy"); e && (!e->is_object() || !member(*e, "address") ||
                                                      !(*e)["address"].is_string())) {
    throw parse_error("'network.egressProxy' must be an object with a string 'address'");
  }
  return v->dump(-1, ' ', false, json::error_handler_t::replace);
}

// Digits only (no sign, no spaces), within int64.
std::optional<int64_t> parse_unsigned(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || text[0] == '-' || text[0] == '+') {
    return std::nullopt;
  }
  return value;
}

bool sandbox_id_chars(std::string_view id) {
  if (id.empty()) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  while (true) {
    auto pos = text.find(sep);
    out.emplace_back(text.substr(0, pos));
    if (pos == std::string_view::npos) break;
    text = text.substr(pos + 1);
  }
  return out;
}
}  // namespace

CreateRequest parse_create_request(std::string_view body, ApiVersion version,
                                   std::optional<int64_t> default_timeout_s) {
  const json doc = parse_object(body, false);
  CreateRequest request;
  if (const json* t = member(doc, "templateID")) {
    if (!t->is_string()) throw parse_error("'templateID' must be a string");
    if (t->get<std::string>().empty()) throw bad_request("'templateID' must not be empty");
    request.template_ref = t->get<std::string>();
  }
  request.timeout_s = int_field(doc, "timeout", 0);
  if (request.timeout_s && *request.timeout_s == 0) throw bad_request("Timeout must be greater than 0");
  if (!request.timeout_s) request.timeout_s = default_timeout_s;
  request.metadata = string_map_field(doc, "metadata");
  request.env_vars = string_map_field(doc, "envVars");
  if (version == ApiVersion::v1) request.secure = bool_field(doc, "secure").value_or(true);
  request.allow_internet_access = bool_field(doc, "allow_internet_access").value_or(true);
  request.auto_pause = bool_field(doc, "autoPause").value_or(false);
  const bool pause_memory = bool_field(doc, "autoPauseMemory").value_or(true);
  request.auto_pause_memory = pause_memory;
  if (const json* r = member(doc, "autoResume")) {
    if (!r->is_object()) throw parse_error("'autoResume' must be an object");
    request.auto_resume = bool_field(*r, "enabled").value_or(false);
  }
  if (request.auto_resume && !pause_memory) {
    throw bad_request("autoResume cannot be combined with autoPauseMemory set to false");
  }
  request.network_json = network_field(doc);
  // mcp, iam and volumeMounts are accepted and ignored (no gateway, workload identity or volumes
  // yet); their shapes are still checked so a typo does not pass silently as a different field.
  if (const json* m = member(doc, "mcp"); m && !m->is_object()) throw parse_error("'mcp' must be an object");
  if (const json* i = member(doc, "iam"); i && !i->is_object()) throw parse_error("'iam' must be an object");
  if (const json* v = member(doc, "volumeMounts"); v && !v->is_array()) {
    throw parse_error("'volumeMounts' must be an array");
  }
  return request;
}

ConnectRequest parse_connect_request(std::string_view body, ApiVersion version) {
  const json doc = parse_object(body, version == ApiVersion::v2);
  ConnectRequest request;
  request.timeout_s = int_field(doc, "timeout", 0);
  if (version == ApiVersion::v1 && !request.timeout_s) throw parse_error("'timeout' is required");
  request.memory = bool_field(doc, "memory").value_or(true);
  return request;
}

bool parse_pause_request(std::string_view body) {
  const json doc = parse_object(body, true);
  return bool_field(doc, "memory").value_or(true);
}

std::string parse_snapshot_request(std::string_view body) {
  const json doc = parse_object(body, true);
  const json* name = member(doc, "name");
  if (!name || name->is_null()) return {};
  if (!name->is_string()) throw parse_error("'name' must be a string");
  return name->get<std::string>();
}

ForkRequest parse_fork_request(std::string_view body) {
  const json doc = parse_object(body, true);
  ForkRequest request;
  if (auto count = int_field(doc, "count", 1, 100)) request.count = static_cast<int>(*count);
  request.timeout_s = int_field(doc, "timeout", 0);
  if (request.timeout_s && *request.timeout_s == 0) request.timeout_s.reset();
  return request;
}

int64_t parse_timeout_request(std::string_view body) {
  const json doc = parse_object(body, false);
  auto timeout = int_field(doc, "timeout", 0);
  if (!timeout) throw parse_error("'timeout' is required");
  return *timeout;
}

int64_t parse_refresh_request(std::string_view body) {
  const json doc = parse_object(body, true);
  auto duration = int_field(doc, "duration", 0, kMaxRefreshSeconds).value_or(kMinRefreshSeconds);
  return std::max(duration, kMinRefreshSeconds);
}

std::string parse_sandbox_id(std::string_view segment) {
  std::string_view id = segment.substr(0, segment.find('-'));
  if (!sandbox_id_chars(id)) throw bad_request("Invalid sandbox ID");
  return std::string(id);
}

ListRequest parse_list_query(const QueryString& query, ApiVersion version) {
  ListRequest request;
  if (auto raw = query.raw("metadata")) {
    auto filter = decode_metadata_filter(*raw);
    if (!filter) throw bad_request("Error when parsing metadata: invalid encoding");
    request.metadata = std::move(*filter);
  }
  if (version == ApiVersion::v1) {
    request.states = {SandboxState::running};
    return request;
  }
  for (const auto& value : query.all("state")) {
    for (const auto& name : split(value, ',')) {
      if (name.empty()) continue;
      if (name == "running") request.states.push_back(SandboxState::running);
      else if (name == "paused") request.states.push_back(SandboxState::paused);
      else throw bad_request("Invalid state: must be running or paused");
    }
  }
  if (auto limit = query.get("limit")) {
    auto n = parse_unsigned(*limit);
    if (!n || *n < 1 || *n > 100) throw bad_request("'limit' must be an integer between 1 and 100");
    request.limit = static_cast<size_t>(*n);
  }
  if (auto token = query.get("nextToken"); token && !token->empty()) request.next_token = *token;
  if (auto order = query.get("order")) {
    if (*order == "asc") throw ApiError(501, "order=asc is not supported");
    if (*order != "desc") throw bad_request("'order' must be asc or desc");
  }
  if (query.raw("startedAfter")) throw ApiError(501, "Filtering by startedAfter is not supported");
  if (query.raw("template")) throw ApiError(501, "Filtering by template is not supported");
  return request;
}

MetricsWindow parse_metrics_window(const QueryString& query) {
  MetricsWindow window;
  auto read = [&](const char* name) -> std::optional<TimePoint> {
    auto text = query.get(name);
    if (!text) return std::nullopt;
    auto secs = parse_unsigned(*text);
    // Beyond year 9999 is no time a sample can have; the bound also keeps the conversion exact.
    if (!secs || *secs > 253402300799) {
      throw bad_request("'" + std::string(name) + "' must be a unix timestamp in seconds");
    }
    return TimePoint(std::chrono::seconds(*secs));
  };
  window.start = read("start");
  window.end = read("end");
  if (window.start && window.end && *window.start > *window.end) {
    throw bad_request("'start' must not be after 'end'");
  }
  return window;
}

std::vector<std::string> parse_sandbox_ids(const QueryString& query) {
  std::vector<std::string> ids;
  std::set<std::string> seen;
  for (const auto& value : query.all("sandbox_ids")) {
    for (const auto& part : split(value, ',')) {
      if (part.empty()) continue;
      std::string id = parse_sandbox_id(part);
      if (seen.insert(id).second) ids.push_back(std::move(id));
    }
  }
  if (ids.empty()) throw bad_request("'sandbox_ids' is required");
  if (ids.size() > kMaxSandboxIds) throw bad_request("At most 100 sandbox IDs may be requested");
  return ids;
}

}  // namespace cove::shim::api
