// Signed /files URLs: the SDK's fixed vector, expirations, and envd's order of checks.
#include <gtest/gtest.h>

#include "files/signing.hpp"

namespace cove::files {
namespace {

constexpr std::string_view kToken = "0tQG31xiMp0IOQfaz9dcwi72L1CPo8e0";

TEST(Signing, FixedVectorFromTheSdkTests) {
  EXPECT_EQ(compute_signature("hello.txt", SignOp::read, "user", kToken, std::nullopt),
            "v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E");
}

TEST(Signing, WithExpirationAndEmptyParts) {
  EXPECT_EQ(compute_signature("hello.txt", SignOp::read, "user", kToken, 1700000000),
            "v1_x1gU0mV8Kid6FIK4Jop2wrli3RLOriJgoanr76XYFKM");
  EXPECT_EQ(compute_signature("/home/user/a b.txt", SignOp::write, "", "secret", std::nullopt),
            "v1_xzGUGNPTSBYB6dEMgcy2X9XjVDa4n0CMskHgpl4b7Z0");
  EXPECT_EQ(compute_signature("", SignOp::read, "", "tok", std::nullopt), "v1_AFf9ysX6EMnsGqTwwjoM8MpGMJSGz92Nvnt7l8J6i9g");
}

struct Check {
  std::string header, signature;
  bool has_signature = true;
  std::optional<std::int64_t> expiration;
  std::string path = "hello.txt", username = "user";
  SignOp op = SignOp::read;
};

std::string run(const Check& c, std::int64_t now = 1700000000) {
  SignatureInput in;
  in.header_token = c.header;
  in.signature = c.has_signature ? &c.signature : nullptr;
  in.expiration = c.expiration;
  in.path = c.path;
  in.username = c.username;
  return verify_signature(in, kToken, c.op, now);
}

TEST(Signing, HeaderTokenDecidesAlone) {
  Check c;
  c.header = std::string(kToken);
  c.has_signature = false;
  EXPECT_EQ(run(c), "");
  c.header = "wrong";
  c.signature = compute_signature("hello.txt", SignOp::read, "user", kToken, std::nullopt);
  c.has_signature = true;
  EXPECT_EQ(run(c), "access token present in header but does not match");  // no fallback to the signature
}

TEST(Signing, MissingAndInvalidSignatures) {
  Check c;
  c.has_signature = false;
  EXPECT_EQ(run(c), "missing signature query parameter");
  c.has_signature = true;
  c.signature = "";
  EXPECT_EQ(run(c), "invalid signature");
  c.signature = compute_signature("hello.txt", SignOp::read, "user", kToken, std::nullopt);
  EXPECT_EQ(run(c), "");
  c.op = SignOp::write;  // a read signature does not allow writing
  EXPECT_EQ(run(c), "invalid signature");
  c.op = SignOp::read;
  c.username = "";  // the raw username takes part, not the resolved default user
  EXPECT_EQ(run(c), "invalid signature");
}

TEST(Signing, ExpiryIsCheckedOnlyAfterAMatch) {
  Check c;
  c.expiration = 1699999999;
  c.signature = compute_signature("hello.txt", SignOp::read, "user", kToken, c.expiration);
  EXPECT_EQ(run(c), "signature is already expired");
  c.signature = "v1_bogus";
  EXPECT_EQ(run(c), "invalid signature");
  c.expiration = 1700000000;  // equal to now: still valid
  c.signature = compute_signature("hello.txt", SignOp::read, "user", kToken, c.expiration);
  EXPECT_EQ(run(c), "");
  // The expiration is part of the signed text.
  c.signature = compute_signature("hello.txt", SignOp::read, "user", kToken, std::nullopt);
  EXPECT_EQ(run(c), "invalid signature");
}

TEST(Signing, ExpirationParameterParsing) {
  EXPECT_FALSE(parse_signature_expiration(std::nullopt).value);
  EXPECT_EQ(parse_signature_expiration(std::string("1700000000")).value, 1700000000);
  EXPECT_EQ(parse_signature_expiration(std::string("+5")).value, 5);
  EXPECT_EQ(parse_signature_expiration(std::string("-5")).value, -5);
  EXPECT_EQ(parse_signature_expiration(std::string("-9223372036854775808")).value, INT64_MIN);
  auto bad = parse_signature_expiration(std::string("12a"));
  EXPECT_FALSE(bad.value);
  EXPECT_EQ(bad.error,
            "Invalid format for parameter signature_expiration: error binding string parameter: strconv.ParseInt: "
            "parsing \"12a\": invalid syntax");
  EXPECT_NE(parse_signature_expiration(std::string("")).error, "");
  EXPECT_NE(parse_signature_expiration(std::string("1.5")).error, "");
  auto big = parse_signature_expiration(std::string("9223372036854775808"));
  EXPECT_NE(big.error.find("value out of range"), std::string::npos);
}

}  // namespace
}  // namespace cove::files
