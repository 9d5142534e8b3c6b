#include <gtest/gtest.h>

#include "edge/proxy_errors.hpp"

namespace cove::shim::edge {

TEST(ProxyErrors, ExactBodies) {
  EXPECT_EQ(sandbox_not_found_body("abc"), R"({"sandboxId":"abc","message":"The sandbox was not found","code":502})");
  EXPECT_EQ(port_closed_body("abc", 8080),
            R"({"sandboxId":"abc","message":"The sandbox is running but port is not open","port":8080,"code":502})");
  EXPECT_EQ(internal_route_body("/init"),
            R"({"message":"This endpoint is reserved for the E2B control plane and is not reachable through the sandbox URL","path":"/init","code":404})");
  EXPECT_EQ(traffic_token_missing_body("abc"),
            R"({"sandboxId":"abc","message":"Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing","code":403})");
  EXPECT_EQ(traffic_token_invalid_body("abc"),
            R"({"sandboxId":"abc","message":"Sandbox is secured with traffic access token. Provided token in header 'e2b-traffic-access-token' is invalid","code":403})");
}

TEST(ProxyErrors, PathIsEscapedAsGoDoes) {
  // Invalid UTF-8 becomes U+FFFD, HTML characters are escaped, quotes stay valid JSON.
  EXPECT_EQ(internal_route_body("/<a>&\"\xff"),
            "{\"message\":\"This endpoint is reserved for the E2B control plane and is not reachable through the "
            "sandbox URL\",\"path\":\"/\\u003ca\\u003e\\u0026\\\"\xef\xbf\xbd\",\"code\":404}");
}

}  // namespace cove::shim::edge
