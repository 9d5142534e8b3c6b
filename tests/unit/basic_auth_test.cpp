// `Authorization: Basic base64("<user>:")` as Go's Request.BasicAuth parses it, and the base64
// helpers (Go's StdEncoding: standard alphabet, padding required).
#include <gtest/gtest.h>

#include "system/basic_auth.hpp"

using cove::system::base64_decode;
using cove::system::base64_encode;
using cove::system::basic_auth_username;

TEST(BasicAuth, UserWithEmptyPassword) {
  EXPECT_EQ(basic_auth_username("Basic dXNlcjo="), "user");   // "user:"
  EXPECT_EQ(basic_auth_username("Basic cm9vdDo="), "root");   // "root:" as the SDK sends it
}

TEST(BasicAuth, SchemeIsCaseInsensitive) {
  EXPECT_EQ(basic_auth_username("basic dXNlcjo="), "user");
  EXPECT_EQ(basic_auth_username("BASIC dXNlcjo="), "user");
  EXPECT_EQ(basic_auth_username("bAsIc dXNlcjo="), "user");
}

TEST(BasicAuth, PasswordIsIgnoredAndUsernameStopsAtFirstColon) {
  EXPECT_EQ(basic_auth_username("Basic dXNlcjpwYXNz"), "user");       // "user:pass"
  EXPECT_EQ(basic_auth_username("Basic dXNlcjpwOnE="), "user");       // "user:p:q"
  EXPECT_EQ(basic_auth_username("Basic Og=="), "");                   // ":" gives an empty (but present) name
}

TEST(BasicAuth, NoColonIsNotCredentials) {
  EXPECT_EQ(basic_auth_username("Basic dXNlcg=="), std::nullopt);  // "user"
  EXPECT_EQ(basic_auth_username("Basic "), std::nullopt);          // "" decodes, but has no colon
}

TEST(BasicAuth, BadBase64OrPaddingIsNotCredentials) {
  EXPECT_EQ(basic_auth_username("Basic dXNlcjo"), std::nullopt);     // padding missing
  EXPECT_EQ(basic_auth_username("Basic dXNlcjo=="), std::nullopt);   // too much padding
  EXPECT_EQ(basic_auth_username("Basic dXNl!jo="), std::nullopt);    // not in the alphabet
  EXPECT_EQ(basic_auth_username("Basic dXNlcjo-"), std::nullopt);    // URL alphabet is not Std
  EXPECT_EQ(basic_auth_username("Basic  dXNlcjo="), std::nullopt);   // extra space is part of the payload
}

TEST(BasicAuth, OtherSchemesAndShortHeaders) {
  EXPECT_EQ(basic_auth_username(""), std::nullopt);
  EXPECT_EQ(basic_auth_username("Basic"), std::nullopt);
  EXPECT_EQ(basic_auth_username("Bearer dXNlcjo="), std::nullopt);
  EXPECT_EQ(basic_auth_username("BasicdXNlcjo="), std::nullopt);
  EXPECT_EQ(basic_auth_username("Basic\tdXNlcjo="), std::nullopt);
}

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},          {"f", "Zg=="},         {"fo", "Zm8="},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded) << plain;
    EXPECT_EQ(base64_decode(encoded), std::string(plain)) << encoded;
  }
}

TEST(Base64, AllByteValuesRoundTrip) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t len = 0; len <= all.size(); len += 37) {
    std::string in = all.substr(len % 256, len);
    std::string enc = base64_encode(in);
    EXPECT_EQ(enc.size() % 4, 0u);
    EXPECT_EQ(base64_decode(enc), in) << "len " << len;
  }
  EXPECT_EQ(base64_encode(std::string("\xfb\xff\xbf", 3)), "+/+/");  // the two non-alphanumerics
  EXPECT_EQ(base64_decode("+/+/"), std::string("\xfb\xff\xbf", 3));
}

TEST(Base64, MalformedInputIsRejected) {
  // (Go's decoder also skips CR/LF; irrelevant for a header value, so not asserted either way.)
  for (const char* bad : {"Zg", "Zg=", "Zm9vY", "Z===", "====", "Zg=a", "Zg==Zg==", "=Zg=", "Zm9*", "Zm 9v"}) {
    EXPECT_EQ(base64_decode(bad), std::nullopt) << '"' << bad << '"';
  }
}
