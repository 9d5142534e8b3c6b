#pragma once
// The control plane's path table: every path of E2B's API (openapi.yml plus the 2.51 additions),
// with `{name}` segments, each method mapped to what serves it. Paths Cove knows but does not
// implement yet map to Endpoint::unimplemented (→ 501), so a client learns "not yet", not "no such
// API". Pure.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cove::shim::api {

enum class Endpoint {
  health,
  create_v1,
  create_v2,
  list_v1,
  list_v2,
  get,
  kill,
  connect_v1,
  connect_v2,
  set_timeout,
  refresh,
  pause,
  resume,             // deprecated POST /sandboxes/{id}/resume: connect that insists on a paused one
  fork,
  snapshot_create,
  snapshots_list,
  metrics,
  metrics_many,
  templates,
  template_alias,
  template_register,  // POST /v3/templates
  template_delete,
  template_files,
  template_upload,    // Cove's own: the upload link `files` hands out (token, no API key)
  build_start,
  build_status,
  tags_assign,
  tags_remove,
  tags_list,
  teams,              // GET /teams: the access token's team
  unimplemented,
};

struct RouteMatch {
  enum class Kind { found, wrong_method, none };
  Kind kind = Kind::none;
  Endpoint endpoint = Endpoint::unimplemented;
  std::string pattern;              // e.g. "/sandboxes/{sandboxID}"
  std::vector<std::string> params;  // the `{…}` segments in order, as sent (not decoded)
  std::string allow;                // for wrong_method: the path's methods, "GET, DELETE"
  // The spec lists AccessTokenAuth (`Authorization: Bearer`) among this operation's security
  // schemes: /teams and the template operations. Everything else takes only X-API-Key.
  bool access_token = false;
};

RouteMatch match_route(std::string_view method, std::string_view path);

// Percent-decoding of a path segment ('+' stays '+'); nullopt on a bad escape.
std::optional<std::string> path_unescape(std::string_view segment);

}  // namespace cove::shim::api
