#include "edge/proxy_errors.hpp"

#include <nlohmann/json.hpp>

namespace cove::shim::edge {
namespace {
using Json = nlohmann::ordered_json;

// As Go's json.Marshal: invalid UTF-8 becomes U+FFFD and <, >, & are escaped (HTML-safe).
std::string marshal(const Json& j) {
  std::string raw = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string sandbox_error(std::string_view id, std::string_view message, int code) {
  Json j;
  j["sandboxId"] = std::string(id);
  j["message"] = std::string(message);
  j["code"] = code;
  return marshal(j);
}
}  // namespace

std::string sandbox_not_found_body(std::string_view sandbox_id) {
  return sandbox_error(sandbox_id, "The sandbox was not found", 502);
}

std::string port_closed_body(std::string_view sandbox_id, uint16_t port) {
  Json j;
  j["sandboxId"] = std::string(sandbox_id);
  j["message"] = "The sandbox is running but port is not open";
  j["port"] = port;
  j["code"] = 502;
  return marshal(j);
}

std::string internal_route_body(std::string_view path) {
  Json j;
  j["message"] = "This endpoint is reserved for the E2B control plane and is not reachable through the sandbox URL";
  j["path"] = std::string(path);
  j["code"] = 404;
  return marshal(j);
}

std::string traffic_token_missing_body(std::string_view sandbox_id) {
  return sandbox_error(sandbox_id,
                       "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing",
                       403);
}

std::string traffic_token_invalid_body(std::string_view sandbox_id) {
  return sandbox_error(
      sandbox_id, "Sandbox is secured with traffic access token. Provided token in header 'e2b-traffic-access-token' is invalid",
      403);
}

std::string still_transitioning_body(std::string_view sandbox_id) {
  return sandbox_error(sandbox_id, "The sandbox is still transitioning. Try again in a moment.", 409);
}

}  // namespace cove::shim::edge
