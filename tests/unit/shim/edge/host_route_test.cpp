#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "edge/host_route.hpp"

namespace cove::shim::edge {
namespace {

constexpr std::string_view kDomain = "cove.localhost";

std::string describe(RouteError e) {
  switch (e) {
    case RouteError::none: return "none";
    case RouteError::missing_header: return "missing_header";
    case RouteError::invalid_host: return "invalid_host";
    case RouteError::invalid_port: return "invalid_port";
    case RouteError::invalid_id: return "invalid_id";
  }
  return "?";
}

std::string describe(HostKind k) {
  switch (k) {
    case HostKind::api: return "api";
    case HostKind::sandbox_port: return "sandbox_port";
    case HostKind::shared: return "shared";
    case HostKind::unknown: return "unknown";
  }
  return "?";
}

// Makes NUL and control bytes visible in failure messages.
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out.size() > 80 ? out.substr(0, 80) + "...(" + std::to_string(s.size()) + " bytes)" : out;
}

std::string with_nul(std::string_view before, std::string_view after) {
  std::string s(before);
  s.push_back('\0');
  s += after;
  return s;
}

// A name of `labels` labels of 63 'a's, under cove.localhost.
std::string long_name(int labels) {
  std::string s = "80-abc";
  for (int i = 0; i < labels; ++i) s += "." + std::string(63, 'a');
  return s;
}

}  // namespace

// --- the Host grammar ----------------------------------------------------------------------------

TEST(HostRouteGrammar, ValidHostHeaders) {
  for (std::string host : {"cove.localhost", "api.cove.localhost", "API.COVE.LOCALHOST", "api.cove.localhost.",
                           "api.cove.localhost:443", "api.cove.localhost.:8443", "49983-abc.cove.localhost",
                           "localhost", "localhost:3001", "a", "a-b.c0", "127.0.0.1", "127.0.0.1:1",
                           "255.255.255.255:65535", "[::1]", "[::1]:443", "[::ffff:127.0.0.1]:80",
                           "[2001:DB8::1]", "8080-abc.cove.localhost:08443", "xn--bcher-kva.example"}) {
    EXPECT_TRUE(is_valid_host_header(host)) << printable(host);
  }
  // Exactly at the limits: 63-character labels, 253 characters in all (plus a trailing dot).
  std::string label63(63, 'x');
  std::string name253 = label63 + "." + label63 + "." + label63 + "." + std::string(61, 'y');
  ASSERT_EQ(name253.size(), 253u);
  EXPECT_TRUE(is_valid_host_header(name253));
  EXPECT_TRUE(is_valid_host_header(name253 + "."));
  EXPECT_TRUE(is_valid_host_header(name253 + ".:65535"));
}

TEST(HostRouteGrammar, InvalidHostHeaders) {
  std::string label63(63, 'x');
  std::vector<std::string> bad = {
      "",
      ".",
      "a..b",
      ".cove.localhost",
      "api.cove.localhost..",
      "a@49983-abc.cove.localhost",
      "user:pw@api.cove.localhost",
      "api.cove.localhost/",
      "api.cove.localhost?x",
      "api.cove.localhost#x",
      "api%2ecove.localhost",
      "%34%39983-abc.cove.localhost",
      " api.cove.localhost",
      "api.cove.localhost ",
      "api .cove.localhost",
      "api.cove.localhost\t",
      "api.cove.localhost\r\nX-Evil: 1",
      "api.cove.localhost\n",
      with_nul("api.cove.localhost", ""),
      with_nul("49983-abc", ".cove.localhost"),
      "api.cove.localhost:",
      "api.cove.localhost:0",
      "api.cove.localhost:65536",
      "api.cove.localhost:+443",
      "api.cove.localhost:-1",
      "api.cove.localhost:443:443",
      "api.cove.localhost:4 43",
      "api.cove.localhost:008443",
      "under_score.cove.localhost",
      "-a.cove.localhost",
      "a-.cove.localhost",
      "caf\xc3\xa9.cove.localhost",
      "\xff.cove.localhost",
      label63 + "x.cove.localhost",
      "1.2.3.256",
      "01.2.3.4",
      "1.2.3",
      "1.2.3.4.5",
      "127.0.0.1.",
      "0x7f.0.0.1",
      "::1",
      "::1:443",
      "[::1",
      "[::1]443",
      "[::1]:",
      "[::1]:0",
      "[::1]:65536",
      "[]",
      "[::1%eth0]",
      "[::1%25eth0]:443",
      "[127.0.0.1]",
      "[v1.fe]",
      "[api.cove.localhost]",
      "[::1]]",
      "[[::1]]",
      "[::1]x",
  };
  // Too long: 254 characters, and a very long host of many labels.
  bad.push_back(label63 + "." + label63 + "." + label63 + "." + std::string(62, 'y'));
  bad.push_back(long_name(200) + ".cove.localhost");
  bad.push_back(std::string(100000, 'a'));
  for (const auto& host : bad) {
    EXPECT_FALSE(is_valid_host_header(host)) << printable(host);
    EXPECT_EQ(classify_host(host, kDomain), HostKind::unknown) << printable(host);
    EXPECT_EQ(parse_sandbox_host(host, kDomain).error, RouteError::invalid_host) << printable(host);
    EXPECT_FALSE(is_shared_host(host, kDomain)) << printable(host);
    // With a domain (the TLS edge) refused before the headers are looked at; the plain listener
    // (no domain) routes on the headers alone and never reads the Host.
    EXPECT_EQ(route_request(host, "abc", "49983", kDomain).error, RouteError::invalid_host) << printable(host);
    const SandboxRoute by_headers = route_request(host, "abc", "49983", "");
    EXPECT_TRUE(by_headers.ok()) << printable(host);
    EXPECT_EQ(by_headers.sandbox_id, "abc");
    EXPECT_EQ(route_request(host, "", "", "").error, RouteError::invalid_host) << printable(host);
  }
}

// --- ports and ids --------------------------------------------------------------------------------

TEST(HostRoutePort, Table) {
  struct Case {
    std::string text;
    bool ok;
    uint16_t value;
  };
  const std::vector<Case> cases = {
      {"1", true, 1},        {"80", true, 80},       {"49983", true, 49983}, {"65535", true, 65535},
      {"08000", true, 8000}, {"00001", true, 1},     {"0", false, 0},        {"00000", false, 0},
      {"65536", false, 0},   {"99999", false, 0},    {"", false, 0},         {"+1", false, 0},
      {"-1", false, 0},      {" 1", false, 0},       {"1 ", false, 0},       {"1.0", false, 0},
      {"0x10", false, 0},    {"008000", false, 0},   {"123456", false, 0},   {"4294967297", false, 0},
      {"\xd9\xa1", false, 0},  // ARABIC-INDIC DIGIT ONE
  };
  for (const auto& c : cases) {
    uint16_t port = 12345;
    EXPECT_EQ(parse_port(c.text, port), c.ok) << printable(c.text);
    if (c.ok) {
      EXPECT_EQ(port, c.value) << c.text;
    }
  }
}

TEST(HostRouteId, Table) {
  for (const std::string& id : std::vector<std::string>{"a", "0", "abc123", "i1b2k3l4m5n6o7p8q9r0", std::string(128, 'z')}) {
    EXPECT_TRUE(is_valid_sandbox_id(id)) << id;
  }
  for (const std::string& id : std::vector<std::string>{"", "ABC", "abC", "a_b", "a-b", "a.b", "a b", "a/b", "caf\xc3\xa9", "\xef\xbd\x81",
                         std::string(129, 'z'), with_nul("ab", "c")}) {
    EXPECT_FALSE(is_valid_sandbox_id(id)) << printable(id);
  }
}

// --- domain_host -----------------------------------------------------------------------------------

TEST(HostRouteDomainHost, StripsAPort) {
  EXPECT_EQ(domain_host("cove.localhost:8443"), "cove.localhost");
  EXPECT_EQ(domain_host("cove.localhost"), "cove.localhost");
  EXPECT_EQ(domain_host("sandbox.example.com:443"), "sandbox.example.com");
  EXPECT_EQ(domain_host(""), "");
  EXPECT_EQ(domain_host("[::1]:8443"), "[::1]");
  EXPECT_EQ(domain_host("::1"), "::1");  // no port to strip
  EXPECT_EQ(domain_host("x:y"), "x:y");  // not a port
}

// --- classify_host ---------------------------------------------------------------------------------

TEST(HostRouteClassify, Table) {
  struct Case {
    std::string host;
    std::string_view domain;
    HostKind kind;
  };
  const std::vector<Case> cases = {
      {"api.cove.localhost", kDomain, HostKind::api},
      {"API.Cove.LocalHost", kDomain, HostKind::api},
      {"api.cove.localhost.", kDomain, HostKind::api},
      {"api.cove.localhost:8443", kDomain, HostKind::api},
      {"api.cove.localhost.:443", kDomain, HostKind::api},
      {"api.cove.localhost:8443", "cove.localhost:8443", HostKind::api},  // a domain with its port
      {"sandbox.cove.localhost", kDomain, HostKind::shared},
      {"SANDBOX.COVE.LOCALHOST.:443", kDomain, HostKind::shared},
      {"localhost", kDomain, HostKind::shared},
      {"LOCALHOST:3001", kDomain, HostKind::shared},
      {"localhost.", kDomain, HostKind::shared},
      {"127.0.0.1", kDomain, HostKind::shared},
      {"127.1.2.3:3001", kDomain, HostKind::shared},
      {"[::1]:443", kDomain, HostKind::shared},
      {"[::1]", kDomain, HostKind::shared},
      {"[::ffff:127.0.0.1]", kDomain, HostKind::shared},
      {"localhost", "", HostKind::shared},
      {"49983-abc.cove.localhost", kDomain, HostKind::sandbox_port},
      {"49983-ABC.COVE.LOCALHOST.:8443", kDomain, HostKind::sandbox_port},
      {"x-y.cove.localhost", kDomain, HostKind::sandbox_port},  // parse_sandbox_host refuses it later
      {"49983-abc.other.net", "", HostKind::sandbox_port},
      {"cove.localhost", kDomain, HostKind::unknown},
      {"www.cove.localhost", kDomain, HostKind::unknown},
      {"api.sandbox.cove.localhost", kDomain, HostKind::unknown},
      {"api.other.com", kDomain, HostKind::unknown},
      {"api.cove.localhost.evil.com", kDomain, HostKind::unknown},
      {"api.evilcove.localhost", kDomain, HostKind::unknown},
      {"apiXcove.localhost", kDomain, HostKind::unknown},
      {"sandbox.evil.com", kDomain, HostKind::unknown},
      {"49983-abc.cove.localhost.evil.com", kDomain, HostKind::unknown},
      {"49983-abc.evilcove.localhost", kDomain, HostKind::unknown},
      {"49983-abc.sub.cove.localhost", kDomain, HostKind::unknown},
      {"49983-abc.localhost", kDomain, HostKind::unknown},
      {"10.0.0.1", kDomain, HostKind::unknown},
      {"[2001:db8::1]", kDomain, HostKind::unknown},
      {"api.cove.localhost", "", HostKind::unknown},
      {"a@api.cove.localhost", kDomain, HostKind::unknown},
      {"api.cove.localhost\r\n", kDomain, HostKind::unknown},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(describe(classify_host(c.host, c.domain)), describe(c.kind))
        << printable(c.host) << " in '" << c.domain << "'";
    EXPECT_EQ(is_shared_host(c.host, c.domain), c.kind == HostKind::shared) << printable(c.host);
    // An api or shared host is never a sandbox route by itself.
    if (c.kind != HostKind::sandbox_port) {
      EXPECT_FALSE(parse_sandbox_host(c.host, c.domain).ok()) << printable(c.host);
    }
  }
}

// --- parse_sandbox_host ----------------------------------------------------------------------------

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

TEST(ParseSandboxHost, Table) {
  struct Case {
    std::string host;
    std::string_view domain;
    RouteError error;
    std::string id = {};
    uint16_t port = 0;
  };
  const std::vector<Case> cases = {
      {"49983-abc.cove.localhost", kDomain, RouteError::none, "abc", 49983},
      {"49983-abc.COVE.localhost", kDomain, RouteError::none, "abc", 49983},
      {"49983-abc.cove.localhost.", kDomain, RouteError::none, "abc", 49983},
      {"49983-abc.cove.localhost:8443", kDomain, RouteError::none, "abc", 49983},
      {"49983-abc.cove.localhost.:8443", kDomain, RouteError::none, "abc", 49983},
      {"49983-abc.cove.localhost:8443", "cove.localhost:8443", RouteError::none, "abc", 49983},
      {"1-a.cove.localhost", kDomain, RouteError::none, "a", 1},
      {"65535-a.cove.localhost", kDomain, RouteError::none, "a", 65535},
      {"08000-a.cove.localhost", kDomain, RouteError::none, "a", 8000},  // as Go's ParseUint
      {"8000-abc-client1.cove.localhost", kDomain, RouteError::none, "abc", 8000},
      // Ports.
      {"0-abc.cove.localhost", kDomain, RouteError::invalid_port},
      {"65536-abc.cove.localhost", kDomain, RouteError::invalid_port},
      {"008000-abc.cove.localhost", kDomain, RouteError::invalid_port},
      {"x1-abc.cove.localhost", kDomain, RouteError::invalid_port},
      {"1x-abc.cove.localhost", kDomain, RouteError::invalid_port},
      {"99999999999999999999-abc.cove.localhost", kDomain, RouteError::invalid_port},
      // Ids.
      {"80-ABC.cove.localhost", kDomain, RouteError::invalid_id},
      {"80-aBc.cove.localhost", kDomain, RouteError::invalid_id},
      {"80--abc.cove.localhost", kDomain, RouteError::invalid_id},
      // The label grammar refuses these before port or id are looked at.
      {"-abc.cove.localhost", kDomain, RouteError::invalid_host},
      {"80-.cove.localhost", kDomain, RouteError::invalid_host},
      {"80-a_b.cove.localhost", kDomain, RouteError::invalid_host},
      {"80-caf\xc3\xa9.cove.localhost", kDomain, RouteError::invalid_host},
      {"+80-abc.cove.localhost", kDomain, RouteError::invalid_host},
      {"80-abc", kDomain, RouteError::invalid_host},
      {"80-abc.", kDomain, RouteError::invalid_host},
      {"49983abc.cove.localhost", kDomain, RouteError::invalid_host},
      {"sandbox.cove.localhost", kDomain, RouteError::invalid_host},
      {"api.cove.localhost", kDomain, RouteError::invalid_host},
      {"localhost:3001", "", RouteError::invalid_host},
      {"127.0.0.1", "", RouteError::invalid_host},
      {"[::1]:443", "", RouteError::invalid_host},
      // Other domains and suffix attacks.
      {"49983-abc.evil.com", kDomain, RouteError::invalid_host},
      {"49983-abc.sub.cove.localhost", kDomain, RouteError::invalid_host},
      {"49983-abc.cove.localhost.evil.com", kDomain, RouteError::invalid_host},
      {"49983-abc.evilcove.localhost", kDomain, RouteError::invalid_host},
      {"49983-abc.localhost", kDomain, RouteError::invalid_host},
      {"49983-abc.cove.localhost:8443", "cove.localhost.evil.com", RouteError::invalid_host},
      {"a@49983-abc.cove.localhost", kDomain, RouteError::invalid_host},
      {"49983-abc@cove.localhost", kDomain, RouteError::invalid_host},
      {"49983-abc.cove.localhost\r", kDomain, RouteError::invalid_host},
      {"49983-abc.cove.localhost\n", kDomain, RouteError::invalid_host},
      {with_nul("49983-abc.cove.localhost", ""), kDomain, RouteError::invalid_host},
      {with_nul("49983-abc", ".cove.localhost"), kDomain, RouteError::invalid_host},
      {long_name(4) + ".cove.localhost", kDomain, RouteError::invalid_host},
      {"", kDomain, RouteError::invalid_host},
  };
  for (const auto& c : cases) {
    auto r = parse_sandbox_host(c.host, c.domain);
    EXPECT_EQ(describe(r.error), describe(c.error)) << printable(c.host) << " in '" << c.domain << "'";
    if (c.error == RouteError::none && r.ok()) {
      EXPECT_EQ(r.sandbox_id, c.id) << c.host;
      EXPECT_EQ(r.port, c.port) << c.host;
      EXPECT_EQ(classify_host(c.host, c.domain), HostKind::sandbox_port) << c.host;
    } else {
      EXPECT_TRUE(r.sandbox_id.empty());
      EXPECT_EQ(r.port, 0);
    }
  }
}

// --- headers ---------------------------------------------------------------------------------------

TEST(ParseSandboxHeaders, BothRequired) {
  auto r = parse_sandbox_headers("abc", "49999");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.sandbox_id, "abc");
  EXPECT_EQ(r.port, 49999);
  EXPECT_EQ(parse_sandbox_headers("abc", "").error, RouteError::missing_header);
  EXPECT_EQ(parse_sandbox_headers("", "49983").error, RouteError::missing_header);
  EXPECT_EQ(parse_sandbox_headers("", "").error, RouteError::missing_header);
}

TEST(ParseSandboxHeaders, Table) {
  struct Case {
    std::string id;
    std::string port;
    RouteError error;
  };
  const std::vector<Case> cases = {
      {"abc", "1", RouteError::none},
      {"abc", "65535", RouteError::none},
      {"abc", "08000", RouteError::none},
      {std::string(128, 'a'), "49983", RouteError::none},
      {"abc", "0", RouteError::invalid_port},
      {"abc", "65536", RouteError::invalid_port},
      {"abc", "49983x", RouteError::invalid_port},
      {"abc", "+1", RouteError::invalid_port},
      {"abc", " 1", RouteError::invalid_port},
      {"abc", "1\r\n", RouteError::invalid_port},
      {"abc", with_nul("1", ""), RouteError::invalid_port},
      {"ABC", "49983", RouteError::invalid_id},
      {"a_b", "49983", RouteError::invalid_id},
      {"ab/c", "49983", RouteError::invalid_id},
      {"caf\xc3\xa9", "49983", RouteError::invalid_id},
      {"abc\r\nX-Evil: 1", "49983", RouteError::invalid_id},
      {with_nul("abc", ""), "49983", RouteError::invalid_id},
      {std::string(129, 'a'), "49983", RouteError::invalid_id},
  };
  for (const auto& c : cases) {
    auto r = parse_sandbox_headers(c.id, c.port);
    EXPECT_EQ(describe(r.error), describe(c.error)) << printable(c.id) << " / " << printable(c.port);
    if (c.error == RouteError::none) {
      EXPECT_EQ(r.sandbox_id, c.id);
    }
  }
}

// --- route_request ---------------------------------------------------------------------------------

TEST(RouteRequest, HeadersWinOnLocalOrSharedHosts) {
  auto r = route_request("localhost:3001", "abc", "49983", "example.com");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.sandbox_id, "abc");
  EXPECT_TRUE(route_request("127.0.0.1:3001", "abc", "49983", "example.com").ok());
  EXPECT_TRUE(route_request("[::1]:3001", "abc", "49983", "example.com").ok());
  EXPECT_TRUE(route_request("[::1]", "abc", "49983", "example.com").ok());
  EXPECT_TRUE(route_request("sandbox.example.com", "abc", "49983", "example.com").ok());
  EXPECT_TRUE(route_request("SANDBOX.example.com.:443", "abc", "49983", "example.com").ok());
  // Exactly one header: 400 missing header, not a fall back to the host.
  EXPECT_EQ(route_request("localhost", "abc", "", "example.com").error, RouteError::missing_header);
}

TEST(RouteRequest, HeadersAreIgnoredOffTheSharedHosts) {
  // api.<domain>, other domains and non-loopback addresses do not route by header.
  EXPECT_EQ(route_request("api.example.com", "abc", "49983", "example.com").error, RouteError::invalid_host);
  EXPECT_EQ(route_request("sandbox.evil.com", "abc", "49983", "example.com").error, RouteError::invalid_host);
  EXPECT_EQ(route_request("10.0.0.1:3001", "abc", "49983", "example.com").error, RouteError::invalid_host);
  EXPECT_EQ(route_request("sandbox.example.com", "ABC", "49983", "example.com").error, RouteError::invalid_id);
  EXPECT_EQ(route_request("sandbox.example.com", "abc", "0", "example.com").error, RouteError::invalid_port);
  EXPECT_EQ(route_request("sandbox.example.com", "", "", "example.com").error, RouteError::invalid_host);
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

TEST(RouteRequest, DomainWithPortRoutesTheSameAsWithout) {
  for (std::string_view domain : {"cove.localhost", "cove.localhost:8443"}) {
    auto r = route_request("49983-abc.cove.localhost:8443", "", "", domain);
    ASSERT_TRUE(r.ok()) << domain;
    EXPECT_EQ(r.sandbox_id, "abc");
    EXPECT_TRUE(route_request("sandbox.cove.localhost:8443", "abc", "1", domain).ok()) << domain;
  }
}

TEST(RouteErrorText, E2bStrings) {
  EXPECT_EQ(route_error_text(RouteError::none), "");
  EXPECT_EQ(route_error_text(RouteError::missing_header), "missing header");
  EXPECT_EQ(route_error_text(RouteError::invalid_host), "Invalid host");
  EXPECT_EQ(route_error_text(RouteError::invalid_port), "Invalid sandbox port");
  EXPECT_EQ(route_error_text(RouteError::invalid_id), "Invalid sandbox ID");
}

}  // namespace cove::shim::edge
