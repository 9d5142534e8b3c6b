#include "edge/traffic_access.hpp"

#include "auth/tokens.hpp"

namespace cove::shim::edge {

TrafficAccess check_traffic_access(uint16_t port, const std::optional<std::string>& expected,
                                   std::optional<std::string_view> given) {
  if (port == kEnvdPort || !expected || expected->empty()) return TrafficAccess::allowed;
  if (!given || given->empty()) return TrafficAccess::token_missing;  // as Go's Header.Get == ""
  return secrets_equal(*given, *expected) ? TrafficAccess::allowed : TrafficAccess::token_invalid;
}

}  // namespace cove::shim::edge
