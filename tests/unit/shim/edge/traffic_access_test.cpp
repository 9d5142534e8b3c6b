#include <gtest/gtest.h>

#include "edge/traffic_access.hpp"

namespace cove::shim::edge {

TEST(TrafficAccess, EnvdPortIsNeverGuarded) {
  EXPECT_EQ(check_traffic_access(49983, std::string("tok"), std::nullopt), TrafficAccess::allowed);
}

TEST(TrafficAccess, NoTokenConfigured) {
  EXPECT_EQ(check_traffic_access(8080, std::string(""), std::nullopt), TrafficAccess::allowed);
  EXPECT_EQ(check_traffic_access(8080, std::nullopt, std::nullopt), TrafficAccess::allowed);
}

TEST(TrafficAccess, TokenRequiredAndCompared) {
  std::optional<std::string> token = "secret-token";
  EXPECT_EQ(check_traffic_access(49999, token, std::nullopt), TrafficAccess::token_missing);
  EXPECT_EQ(check_traffic_access(49999, token, std::string_view("")), TrafficAccess::token_missing);
  EXPECT_EQ(check_traffic_access(49999, token, std::string_view("secret-tokeN")), TrafficAccess::token_invalid);
  EXPECT_EQ(check_traffic_access(49999, token, std::string_view("secret")), TrafficAccess::token_invalid);
  EXPECT_EQ(check_traffic_access(49999, token, std::string_view("secret-token")), TrafficAccess::allowed);
}

}  // namespace cove::shim::edge
