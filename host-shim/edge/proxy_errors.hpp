#pragma once
// The proxy's own answers, byte for byte as E2B's proxy sends them to non-browser clients
// (packages/shared/pkg/proxy/template/*.go: Go's json.Marshal in field order, no newline).
// The SDK keys on these: a 502 from /health means "the sandbox is gone".
#include <cstdint>
#include <string>
#include <string_view>

namespace cove::shim::edge {

inline constexpr std::string_view kJsonContentType = "application/json; charset=utf-8";
inline constexpr std::string_view kTextContentType = "text/plain; charset=utf-8";
inline constexpr std::string_view kTrafficTokenHeader = "e2b-traffic-access-token";

std::string sandbox_not_found_body(std::string_view sandbox_id);                 // 502
std::string port_closed_body(std::string_view sandbox_id, uint16_t port);        // 502
std::string internal_route_body(std::string_view path);                          // 404
std::string traffic_token_missing_body(std::string_view sandbox_id);             // 403
std::string traffic_token_invalid_body(std::string_view sandbox_id);             // 403
std::string still_transitioning_body(std::string_view sandbox_id);               // 409

}  // namespace cove::shim::edge
