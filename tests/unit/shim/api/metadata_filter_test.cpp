#include <gtest/gtest.h>

#include "api/metadata_filter.hpp"

namespace cove::shim::api {
namespace {
using Map = std::map<std::string, std::string>;

TEST(MetadataFilter, DecodesTheSdkWireExampleThreeTimes) {
  // e2b-sdk.md §2 "List details": {user:'alice','a b':'c&d'} as the SDK puts it on the wire.
  auto decoded = decode_metadata_filter("user%3Dalice%26a%252520b%3Dc%252526d");
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(*decoded, (Map{{"user", "alice"}, {"a b", "c&d"}}));
}

TEST(MetadataFilter, PlainAlphanumericsAreTheIdentity) {
  EXPECT_EQ(decode_metadata_filter("user=abc&app=prod"), (Map{{"user", "abc"}, {"app", "prod"}}));
  EXPECT_EQ(decode_metadata_filter("user%3Dabc"), (Map{{"user", "abc"}}));
}

TEST(MetadataFilter, EncodedEqualsAndPercentSurviveAsData) {
  // encodeURIComponent('x=y%') = 'x%3Dy%25', URLSearchParams → 'x%253Dy%2525', HTTP → 'x%25253Dy%252525'.
  EXPECT_EQ(decode_metadata_filter("k%3Dx%25253Dy%252525"), (Map{{"k", "x=y%"}}));
}

TEST(MetadataFilter, EmptyAndValuelessEntries) {
  EXPECT_EQ(decode_metadata_filter(""), Map{});
  EXPECT_EQ(decode_metadata_filter("a%3D%26%26b%3D2"), (Map{{"a", ""}, {"b", "2"}}));
  EXPECT_EQ(decode_metadata_filter("flag"), (Map{{"flag", ""}}));
}

TEST(MetadataFilter, FirstValueOfARepeatedKeyWins) {
  EXPECT_EQ(decode_metadata_filter("a%3D1%26a%3D2"), (Map{{"a", "1"}}));
}

TEST(MetadataFilter, BadEscapesAtEachStepAreRejected) {
  EXPECT_FALSE(decode_metadata_filter("a%3").has_value());        // first decode
  EXPECT_FALSE(decode_metadata_filter("a%3D%25zz").has_value());  // second decode: "%zz"
  EXPECT_FALSE(decode_metadata_filter("a%3D%2525zz").has_value());  // third decode: "%zz"
  EXPECT_FALSE(decode_metadata_filter("%3D1").has_value());      // empty key
}

}  // namespace
}  // namespace cove::shim::api
