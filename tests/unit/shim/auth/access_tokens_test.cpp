#include "auth/access_tokens.hpp"

#include <gtest/gtest.h>

#include <set>

#include "auth/api_keys.hpp"

namespace cove::shim {
namespace {

const std::string kGood = "sk_e2b_0123456789abcdef0123456789abcdef01234567";

TEST(AccessTokens, GeneratedTokensAreWellFormedAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    std::string token = generate_access_token();
    ASSERT_EQ(token.size(), 47u);
    EXPECT_EQ(token.substr(0, 7), "sk_e2b_");
    EXPECT_EQ(token.find_first_not_of("0123456789abcdef", 7), std::string::npos) << token;
    EXPECT_TRUE(is_well_formed_access_token(token)) << token;
    seen.insert(token);
  }
  EXPECT_EQ(seen.size(), 64u);
}

TEST(AccessTokens, WellFormednessRejectsNearMisses) {
  EXPECT_TRUE(is_well_formed_access_token(kGood));
  EXPECT_FALSE(is_well_formed_access_token(""));
  EXPECT_FALSE(is_well_formed_access_token("sk_e2b_"));
  EXPECT_FALSE(is_well_formed_access_token(kGood.substr(0, 46)));          // one digit short
  EXPECT_FALSE(is_well_formed_access_token(kGood + "8"));                  // one digit long
  EXPECT_FALSE(is_well_formed_access_token("SK_E2B_" + kGood.substr(7)));  // prefix case
  EXPECT_FALSE(is_well_formed_access_token("sk_0123456789abcdef0123456789abcdef01234567"));
  EXPECT_FALSE(is_well_formed_access_token("sk_e2b_0123456789ABCDEF0123456789abcdef01234567"));
  EXPECT_FALSE(is_well_formed_access_token("sk_e2b_0123456789abcdeg0123456789abcdef01234567"));
  EXPECT_FALSE(is_well_formed_access_token(std::string("sk_e2b_0123456789abcdef0123456789abcdef0123456\0", 47)));
}

TEST(AccessTokens, ApiKeysAndAccessTokensAreNotInterchangeable) {
  EXPECT_FALSE(is_well_formed_access_token("e2b_0123456789abcdef0123456789abcdef01234567"));
  EXPECT_FALSE(is_well_formed_api_key(kGood));
  EXPECT_FALSE(is_well_formed_api_key(generate_access_token()));
  EXPECT_FALSE(is_well_formed_access_token(generate_api_key()));
}

TEST(AccessTokens, HashIsHexSha256OfTheWholeToken) {
  // printf 'sk_e2b_0123456789abcdef0123456789abcdef01234567' | sha256sum
  EXPECT_EQ(hash_access_token(kGood), "9ac3470e8652cac754ec62060955ca0eed3932ed8d1583dbb65329d4df9b70a2");
  EXPECT_EQ(hash_access_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(hash_access_token(kGood), hash_access_token(kGood.substr(3)));
}

TEST(AccessTokens, MaskShowsPrefixAndFourDigitsEachSide) {
  EXPECT_EQ(mask_access_token(kGood), "sk_e2b_0123\u20264567");
  EXPECT_EQ(mask_access_token("sk_e2b_0123456"), "sk_e2b_\u2026");
  EXPECT_EQ(mask_access_token("secret"), "\u2026");
  EXPECT_EQ(mask_access_token(""), "\u2026");
}

}  // namespace
}  // namespace cove::shim
