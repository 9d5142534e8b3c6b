#include "auth/api_keys.hpp"

#include <gtest/gtest.h>

#include <set>

namespace cove::shim {
namespace {

TEST(ApiKeys, GeneratedKeysAreWellFormedAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    std::string key = generate_api_key();
    ASSERT_EQ(key.size(), 44u);
    EXPECT_EQ(key.substr(0, 4), "e2b_");
    EXPECT_EQ(key.find_first_not_of("0123456789abcdef", 4), std::string::npos) << key;
    EXPECT_TRUE(is_well_formed_api_key(key)) << key;
    seen.insert(key);
  }
  EXPECT_EQ(seen.size(), 64u);
}

TEST(ApiKeys, WellFormednessRejectsNearMisses) {
  const std::string good = "e2b_0123456789abcdef0123456789abcdef01234567";
  EXPECT_TRUE(is_well_formed_api_key(good));
  EXPECT_FALSE(is_well_formed_api_key(""));
  EXPECT_FALSE(is_well_formed_api_key("e2b_"));
  EXPECT_FALSE(is_well_formed_api_key(good.substr(0, 43)));               // one digit short
  EXPECT_FALSE(is_well_formed_api_key(good + "8"));                       // one digit long
  EXPECT_FALSE(is_well_formed_api_key("E2B_" + good.substr(4)));          // prefix case
  EXPECT_FALSE(is_well_formed_api_key("e2c_" + good.substr(4)));          // other prefix
  EXPECT_FALSE(is_well_formed_api_key("e2b_0123456789ABCDEF0123456789abcdef01234567"));  // uppercase hex
  EXPECT_FALSE(is_well_formed_api_key("e2b_0123456789abcdeg0123456789abcdef01234567"));  // not hex
  EXPECT_FALSE(is_well_formed_api_key(std::string("e2b_0123456789abcdef0123456789abcdef0123456\0", 44)));
}

TEST(ApiKeys, HashIsHexSha256OfTheWholeKey) {
  // printf 'e2b_0123456789abcdef0123456789abcdef01234567' | sha256sum
  EXPECT_EQ(hash_api_key("e2b_0123456789abcdef0123456789abcdef01234567"),
            "285c79b208f1b809feed44bd1339b85da6a5f0a9c2e0fb5a95792d7989af7232");
  // FIPS 180-2 test vector.
  EXPECT_EQ(hash_api_key("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ApiKeys, MaskShowsPrefixAndFourDigitsEachSide) {
  EXPECT_EQ(mask_api_key("e2b_0123456789abcdef0123456789abcdef01234567"), "e2b_0123\u20264567");
  // Anything too short to be a key reveals none of itself.
  EXPECT_EQ(mask_api_key("e2b_0123456"), "e2b_\u2026");
  EXPECT_EQ(mask_api_key("secret"), "\u2026");
  EXPECT_EQ(mask_api_key(""), "\u2026");
}

}  // namespace
}  // namespace cove::shim
