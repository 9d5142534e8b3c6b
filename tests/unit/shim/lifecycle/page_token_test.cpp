#include "lifecycle/page_token.hpp"

#include <gtest/gtest.h>

namespace cove::shim {
namespace {

TimePoint at_ns(int64_t ns) {
  return TimePoint{std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns))};
}

TEST(PageToken, RoundTrips) {
  auto token = encode_page_token(at_ns(1764500000123456789), "abc123");
  auto decoded = decode_page_token(token);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->first, at_ns(1764500000123456789));
  EXPECT_EQ(decoded->second, "abc123");
}

TEST(PageToken, IsUrlSafe) {
  auto token = encode_page_token(at_ns(1764500000123456789), "zzzzzzzzzzzzzzzzzzzz");
  EXPECT_EQ(token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            std::string::npos);
}

TEST(PageToken, RejectsTampering) {
  auto token = encode_page_token(at_ns(42), "abc");
  EXPECT_FALSE(decode_page_token(""));
  EXPECT_FALSE(decode_page_token("!!!"));
  EXPECT_FALSE(decode_page_token(token + "A"));
  EXPECT_FALSE(decode_page_token(token.substr(0, token.size() - 1)));
  std::string flipped = token;
  flipped[0] = flipped[0] == 'd' ? 'e' : 'd';
  EXPECT_FALSE(decode_page_token(flipped));
  EXPECT_FALSE(decode_page_token(std::string(500, 'A')));
}

TEST(PageToken, RejectsBadIdsAndNumbers) {
  // Hand-made payloads: base64url of "v1.-5.abc", "v1.12.ABC", "v1.12.", "v2.12.abc".
  for (std::string payload : {"v1.-5.abc", "v1.12.ABC", "v1.12.", "v2.12.abc", "v1.x.abc", "v1.12"}) {
    static constexpr std::string_view kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    for (unsigned char c : payload) {
      acc = (acc << 8) | c;
      bits += 8;
      while (bits >= 6) {
        bits -= 6;
        out.push_back(kAlphabet[(acc >> bits) & 63]);
      }
    }
    if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
    EXPECT_FALSE(decode_page_token(out)) << payload;
  }
}

}  // namespace
}  // namespace cove::shim
