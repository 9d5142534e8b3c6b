#include "api/routes.hpp"

#include <optional>

namespace cove::shim::api {
namespace {

struct MethodRoute {
  std::string_view method;
  Endpoint endpoint;
  bool access_token = false;  // see RouteMatch::access_token
};

struct PathRoute {
  std::string_view pattern;
  std::vector<MethodRoute> methods;
};

constexpr Endpoint kTodo = Endpoint::unimplemented;
constexpr bool kToken = true;  // also takes an access token (openapi.yml: AccessTokenAuth)

// Order matters where patterns overlap: the first path that matches decides (literal segments are
// listed before `{…}` ones at the same place, as E2B's router prefers static segments).
const std::vector<PathRoute>& table() {
  static const std::vector<PathRoute> routes = {
      {"/health", {{"GET", Endpoint::health}}},
      {"/sandboxes", {{"GET", Endpoint::list_v1}, {"POST", Endpoint::create_v1}}},
      {"/v2/sandboxes", {{"GET", Endpoint::list_v2}, {"POST", Endpoint::create_v2}}},
      {"/sandboxes/metrics", {{"GET", Endpoint::metrics_many}}},
      {"/sandboxes/{sandboxID}", {{"GET", Endpoint::get}, {"DELETE", Endpoint::kill}}},
      {"/sandboxes/{sandboxID}/connect", {{"POST", Endpoint::connect_v1}}},
      {"/v2/sandboxes/{sandboxID}/connect", {{"POST", Endpoint::connect_v2}}},
      {"/sandboxes/{sandboxID}/timeout", {{"POST", Endpoint::set_timeout}}},
      {"/sandboxes/{sandboxID}/refreshes", {{"POST", Endpoint::refresh}}},
      {"/sandboxes/{sandboxID}/metrics", {{"GET", Endpoint::metrics}}},
      {"/sandboxes/{sandboxID}/logs", {{"GET", kTodo}}},
      {"/v2/sandboxes/{sandboxID}/logs", {{"GET", kTodo}}},
      {"/sandboxes/{sandboxID}/pause", {{"POST", Endpoint::pause}}},
      {"/sandboxes/{sandboxID}/resume", {{"POST", Endpoint::resume}}},
      {"/sandboxes/{sandboxID}/fork", {{"POST", Endpoint::fork}}},
      {"/sandboxes/{sandboxID}/network", {{"PUT", kTodo}}},
      {"/sandboxes/{sandboxID}/snapshots", {{"POST", Endpoint::snapshot_create}}},
      {"/snapshots", {{"GET", Endpoint::snapshots_list}}},
      {"/templates", {{"GET", Endpoint::templates, kToken}, {"POST", kTodo, kToken}}},
      {"/templates/tags", {{"POST", Endpoint::tags_assign}, {"DELETE", Endpoint::tags_remove}}},
      {"/templates/aliases/{alias}", {{"GET", Endpoint::template_alias}}},
      {"/templates/{templateID}",
       {{"GET", kTodo}, {"POST", kTodo, kToken}, {"DELETE", Endpoint::template_delete, kToken}, {"PATCH", kTodo, kToken}}},
      {"/templates/{templateID}/tags", {{"GET", Endpoint::tags_list}}},
      {"/templates/{templateID}/files/{hash}", {{"GET", Endpoint::template_files, kToken}}},
      {"/templates/{templateID}/files/{hash}/upload", {{"PUT", Endpoint::template_upload}}},
      {"/templates/{templateID}/builds/{buildID}", {{"POST", kTodo, kToken}}},
      {"/templates/{templateID}/builds/{buildID}/status", {{"GET", Endpoint::build_status, kToken}}},
      {"/templates/{templateID}/builds/{buildID}/logs", {{"GET", kTodo, kToken}}},
      {"/v2/templates", {{"GET", kTodo, kToken}, {"POST", kTodo}}},
      {"/v2/templates/{templateID}", {{"PATCH", kTodo, kToken}}},
      {"/v2/templates/{templateID}/builds/{buildID}", {{"POST", Endpoint::build_start}}},
      {"/v3/templates", {{"POST", Endpoint::template_register}}},
      {"/teams", {{"GET", Endpoint::teams, kToken}}},
      {"/teams/{teamID}/metrics", {{"GET", kTodo}}},
      {"/teams/{teamID}/metrics/max", {{"GET", kTodo}}},
      {"/access-tokens", {{"POST", kTodo}}},
      {"/access-tokens/{accessTokenID}", {{"DELETE", kTodo}}},
      {"/api-keys", {{"GET", kTodo}, {"POST", kTodo}}},
      {"/api-keys/{apiKeyID}", {{"PATCH", kTodo}, {"DELETE", kTodo}}},
      {"/volumes", {{"GET", kTodo}, {"POST", kTodo}}},
      {"/volumes/{volumeID}", {{"GET", kTodo}, {"DELETE", kTodo}}},
      {"/secrets", {{"GET", kTodo}, {"POST", kTodo}}},
      {"/secrets/{secretID}", {{"GET", kTodo}, {"POST", kTodo}, {"DELETE", kTodo}}},
  };
  return routes;
}

std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  path.remove_prefix(1);  // the leading '/'
  while (true) {
    auto slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path = path.substr(slash + 1);
  }
  return out;
}

// Matches and collects the `{…}` segments; every segment must be non-empty.
bool matches(std::string_view pattern, const std::vector<std::string_view>& path,
             std::vector<std::string>& params) {
  auto parts = segments(pattern);
  if (parts.size() != path.size()) return false;
  params.clear();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (path[i].empty()) return false;
    if (parts[i].front() == '{') {
      params.emplace_back(path[i]);
    } else if (parts[i] != path[i]) {
      return false;
    }
  }
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

RouteMatch match_route(std::string_view method, std::string_view path) {
  RouteMatch result;
  if (path.empty() || path.front() != '/') return result;
  const auto parts = segments(path);
  for (const auto& route : table()) {
    std::vector<std::string> params;
    if (!matches(route.pattern, parts, params)) continue;
    result.pattern = std::string(route.pattern);
    result.params = std::move(params);
    for (const auto& m : route.methods) {
      if (!result.allow.empty()) result.allow += ", ";
      result.allow += m.method;
      if (m.method == method) {
        result.kind = RouteMatch::Kind::found;
        result.endpoint = m.endpoint;
        result.access_token = m.access_token;
      }
    }
    if (result.kind != RouteMatch::Kind::found) result.kind = RouteMatch::Kind::wrong_method;
    return result;
  }
  return result;
}

std::optional<std::string> path_unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

}  // namespace cove::shim::api
