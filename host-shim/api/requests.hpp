#pragma once
// Request bodies and query strings → the lifecycle's typed requests. Pure: text in, values out;
// anything malformed throws ApiError(400) with a message that names the field, never its value.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/query_string.hpp"
#include "lifecycle/lifecycle.hpp"

namespace cove::shim::api {

// v1 = `/sandboxes…` (SDK ≤ 2.50), v2 = `/v2/sandboxes…` (SDK 2.51).
enum class ApiVersion { v1, v2 };

// E2B's floor (and default) for a refresh, in seconds.
inline constexpr int64_t kMinRefreshSeconds = 15;
inline constexpr int64_t kMaxRefreshSeconds = 3600;

// `POST /sandboxes`, `POST /v2/sandboxes`. An omitted timeout becomes `default_timeout_s` (nullopt
// leaves it to the lifecycle's configured default). `secure` is read only by v1 (v2 is always
// secured).
CreateRequest parse_create_request(std::string_view body, ApiVersion version,
                                   std::optional<int64_t> default_timeout_s);
struct ConnectRequest {
  std::optional<int64_t> timeout_s;
  bool memory = true;  // false: reboot over the kept files
};
// `POST …/connect`: v1 requires `{timeout}`; v2's body and timeout are optional.
ConnectRequest parse_connect_request(std::string_view body, ApiVersion version);
// `POST /sandboxes/{id}/pause` `{memory?}` (optional body; memory defaults to true).
bool parse_pause_request(std::string_view body);
// `POST /sandboxes/{id}/snapshots` `{name?}`.
std::string parse_snapshot_request(std::string_view body);
struct ForkRequest {
  int count = 1;
  std::optional<int64_t> timeout_s;
};
// `POST /sandboxes/{id}/fork` `{count?, timeout?}` (optional body; count 1..100).
ForkRequest parse_fork_request(std::string_view body);
// `POST /sandboxes/{id}/timeout` `{timeout}` (required, ≥ 0).
int64_t parse_timeout_request(std::string_view body);
// `POST /sandboxes/{id}/refreshes` `{duration}` (optional, 0..3600; raised to 15 as E2B does).
int64_t parse_refresh_request(std::string_view body);

// A sandbox id from a path: E2B accepts `<id>-<clientID>` and strips the suffix; the rest must
// match ^[a-z0-9]+$ (else 400 "Invalid sandbox ID").
std::string parse_sandbox_id(std::string_view segment);

// `GET /v2/sandboxes` (v2) or `GET /sandboxes` (v1: running only, no paging parameters).
ListRequest parse_list_query(const QueryString& query, ApiVersion version);

struct MetricsWindow {
  std::optional<TimePoint> start, end;
};
// `?start=&end=` in unix seconds (integers ≥ 0; start ≤ end when both are given).
MetricsWindow parse_metrics_window(const QueryString& query);
// `?sandbox_ids=a,b`: required, 1..100 distinct ids (suffixes stripped, order kept).
std::vector<std::string> parse_sandbox_ids(const QueryString& query);

}  // namespace cove::shim::api
