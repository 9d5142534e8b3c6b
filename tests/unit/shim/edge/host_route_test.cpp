#include <gtest/gtest.h>

#include "edge/host_route.hpp"

namespace cove::shim::edge {

TEST(ParseSandboxHost, PortIdAndDomain) {
  auto r = parse_sandbox_host("49983-abc123.example.com", "example.com");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.sandbox_id, "abc123");
  EXPECT_EQ(r.port, 49983);
}

TEST(ParseSandboxHost, SuffixAfterIdAndHostPortAreIgnored) {
  auto r = parse_sandbox_host("8080-abc-00000000.example.com:443", "example.com");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.sandbox_id, "abc");
  EXPECT_EQ(r.port, 8080);
}

TEST(ParseSandboxHost, DomainIsCaseInsensitiveAndMayEndInADot) {
  EXPECT_TRUE(parse_sandbox_host("1-a.Example.COM", "example.com").ok());
  EXPECT_TRUE(parse_sandbox_host("1-a.example.com.", "example.com").ok());
}

TEST(ParseSandboxHost, AnyDomainWithoutConfiguredOne) {
  auto r = parse_sandbox_host("3000-zz9.other.net", "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.sandbox_id, "zz9");
  EXPECT_EQ(r.port, 3000);
}

TEST(ParseSandboxHost, Errors) {
  EXPECT_EQ(parse_sandbox_host("localhost:3001", "").error, RouteError::invalid_host);
  EXPECT_EQ(parse_sandbox_host("49983abc.example.com", "example.com").error, RouteError::invalid_host);
  EXPECT_EQ(parse_sandbox_host("49983-abc.evil.com", "example.com").error, RouteError::invalid_host);
  EXPECT_EQ(parse_sandbox_host("49983-abc.sub.example.com", "example.com").error, RouteError::invalid_host);
  EXPECT_EQ(parse_sandbox_host("x1-abc.example.com", "example.com").error, RouteError::invalid_port);
  EXPECT_EQ(parse_sandbox_host("70000-abc.example.com", "example.com").error, RouteError::invalid_port);
  EXPECT_EQ(parse_sandbox_host("0-abc.example.com", "example.com").error, RouteError::invalid_port);
  EXPECT_EQ(parse_sandbox_host("-abc.example.com", "example.com").error, RouteError::invalid_port);
  EXPECT_EQ(parse_sandbox_host("80-ABC.example.com", "example.com").error, RouteError::invalid_id);
  EXPECT_EQ(parse_sandbox_host("80-.example.com", "example.com").error, RouteError::invalid_id);
  EXPECT_EQ(parse_sandbox_host("", "example.com").error, RouteError::invalid_host);
}

TEST(ParseSandboxHeaders, BothRequired) {
  auto r = parse_sandbox_headers("abc", "49999");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.sandbox_id, "abc");
  EXPECT_EQ(r.port, 49999);
  EXPECT_EQ(parse_sandbox_headers("abc", "").error, RouteError::missing_header);
  EXPECT_EQ(parse_sandbox_headers("", "49983").error, RouteError::missing_header);
  EXPECT_EQ(parse_sandbox_headers("abc", "49983x").error, RouteError::invalid_port);
  EXPECT_EQ(parse_sandbox_headers("abc", "+1").error, RouteError::invalid_port);
  EXPECT_EQ(parse_sandbox_headers("ab/c", "49983").error, RouteError::invalid_id);
  EXPECT_EQ(parse_sandbox_headers(std::string(200, 'a'), "49983").error, RouteError::invalid_id);
}

TEST(RouteRequest, HeadersWinOnLocalOrSharedHosts) {
  auto r = route_request("localhost:3001", "abc", "49983", "example.com");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.sandbox_id, "abc");
  EXPECT_TRUE(route_request("127.0.0.1:3001", "abc", "49983", "example.com").ok());
  EXPECT_TRUE(route_request("[::1]:3001", "abc", "49983", "example.com").ok());
  EXPECT_TRUE(route_request("sandbox.example.com", "abc", "49983", "example.com").ok());
  // Exactly one header: 400 missing header, not a fall back to the host.
  EXPECT_EQ(route_request("localhost", "abc", "", "example.com").error, RouteError::missing_header);
}

TEST(RouteRequest, NoDomainMeansHeadersAlways) {
  auto r = route_request("cove.internal:3001", "abc", "8080", "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.port, 8080);
  EXPECT_EQ(route_request("localhost:3001", "", "", "").error, RouteError::invalid_host);
  EXPECT_EQ(route_request("localhost:3001", "", "1", "").error, RouteError::missing_header);
}

TEST(RouteRequest, HostOfASandboxIgnoresHeaders) {
  // On <port>-<id>.<domain> the host decides, as in E2B.
  auto r = route_request("8080-abc.example.com", "other", "49983", "example.com");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.sandbox_id, "abc");
  EXPECT_EQ(r.port, 8080);
}

TEST(RouteErrorText, E2bStrings) {
  EXPECT_EQ(route_error_text(RouteError::missing_header), "missing header");
  EXPECT_EQ(route_error_text(RouteError::invalid_host), "Invalid host");
  EXPECT_EQ(route_error_text(RouteError::invalid_port), "Invalid sandbox port");
  EXPECT_EQ(route_error_text(RouteError::invalid_id), "Invalid sandbox ID");
}

}  // namespace cove::shim::edge
