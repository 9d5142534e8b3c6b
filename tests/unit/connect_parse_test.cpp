// Connect-Timeout-Ms and Keepalive-Ping-Interval header parsing.
#include <gtest/gtest.h>

#include "rpc/connect.hpp"

using namespace std::chrono_literals;
using cove::rpc::parse_keepalive;
using cove::rpc::parse_timeout_ms;

TEST(ConnectTimeout, ValidValues) {
  EXPECT_EQ(parse_timeout_ms("60000"), 60000ms);
  EXPECT_EQ(parse_timeout_ms("1"), 1ms);
  EXPECT_EQ(parse_timeout_ms("0"), 0ms);
  EXPECT_EQ(parse_timeout_ms("007"), 7ms);
  // Ten digits is the Connect maximum, and is accepted.
  EXPECT_EQ(parse_timeout_ms("9999999999"), 9999999999ms);
}

TEST(ConnectTimeout, MoreThanTenDigitsIsInvalid) {
  EXPECT_EQ(parse_timeout_ms("10000000000"), std::nullopt);
  EXPECT_EQ(parse_timeout_ms("00000000001"), std::nullopt);
  EXPECT_EQ(parse_timeout_ms("99999999999999999999999"), std::nullopt);
}

TEST(ConnectTimeout, NonDigitsAndEmptyAreInvalid) {
  for (const char* bad : {"", "abc", "12a", "a12", "-1", "+5", " 5", "5 ", "1.5", "0x10", "1e3"}) {
    EXPECT_EQ(parse_timeout_ms(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(ConnectKeepalive, ValidSeconds) {
  EXPECT_EQ(parse_keepalive("50"), 50s);
  EXPECT_EQ(parse_keepalive("1"), 1s);
  EXPECT_EQ(parse_keepalive("3600"), 3600s);
}

TEST(ConnectKeepalive, JunkMeansNinetySecondDefault) {
  EXPECT_EQ(cove::rpc::kDefaultKeepalive, 90s);
  for (const char* bad : {"", "abc", "50s", " 50", "5.5", "-5", "0", "99999999999999999999999"}) {
    EXPECT_EQ(parse_keepalive(bad), 90s) << '"' << bad << '"';
  }
}
