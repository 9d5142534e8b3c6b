#pragma once
// The traffic access token guard of E2B's proxy: ports other than envd's require the header
// `e2b-traffic-access-token` when the sandbox has such a token (network.allowPublicTraffic=false).
// envd's port is guarded by envd's own X-Access-Token instead.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cove::shim::edge {

inline constexpr uint16_t kEnvdPort = 49983;

enum class TrafficAccess { allowed, token_missing, token_invalid };

// `expected`: Lifecycle::traffic_token (nullopt = not running: let open_port answer 502).
// `given`: the header value, nullopt when absent (empty counts as absent). The comparison is constant-time.
TrafficAccess check_traffic_access(uint16_t port, const std::optional<std::string>& expected,
                                   std::optional<std::string_view> given);

}  // namespace cove::shim::edge
