#include "config/config.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../store/scratch_dir.hpp"
#include "config/values.hpp"

namespace cove::shim {
namespace {

// The message a bad config produces ("" if it was accepted).
std::string error_of(const std::string& text) {
  try {
    parse_config(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& text, std::string_view expected_prefix, std::string_view fragment = "") {
  std::string message = error_of(text);
  ASSERT_FALSE(message.empty()) << "accepted:\n" << text;
  EXPECT_EQ(message.rfind(expected_prefix, 0), 0u) << "message: " << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message;
}

void expect_same(const Config& a, const Config& b) {
  EXPECT_EQ(a.api_listen, b.api_listen);
  EXPECT_EQ(a.sandbox_listen, b.sandbox_listen);
  EXPECT_EQ(a.tls_listen, b.tls_listen);
  EXPECT_EQ(a.tls_cert, b.tls_cert);
  EXPECT_EQ(a.tls_key, b.tls_key);
  EXPECT_EQ(a.http2, b.http2);
  EXPECT_EQ(a.domain, b.domain);
  EXPECT_EQ(a.state_dir, b.state_dir);
  EXPECT_EQ(a.agent_path, b.agent_path);
  EXPECT_EQ(a.default_timeout_s, b.default_timeout_s);
  EXPECT_EQ(a.max_timeout_s, b.max_timeout_s);
  EXPECT_EQ(a.pids_max, b.pids_max);
  EXPECT_EQ(a.max_sandboxes, b.max_sandboxes);
  EXPECT_EQ(a.bridge, b.bridge);
  EXPECT_EQ(a.subnet, b.subnet);
  EXPECT_EQ(a.templates.size(), b.templates.size());
  EXPECT_EQ(a.base_rootfs, b.base_rootfs);
  EXPECT_EQ(a.pause_cold_after_s, b.pause_cold_after_s);
  EXPECT_EQ(a.paused_retention_s, b.paused_retention_s);
  EXPECT_EQ(a.criu_path, b.criu_path);
}

TEST(Config, EmptyFileGivesTheDefaults) {
  Config cfg = parse_config("");
  expect_same(cfg, Config{});
  EXPECT_EQ(cfg.api_listen, (std::vector<std::string>{"127.0.0.1:3000", "[::1]:3000"}));
  EXPECT_EQ(cfg.sandbox_listen, (std::vector<std::string>{"127.0.0.1:3001", "[::1]:3001"}));
  EXPECT_EQ(cfg.tls_listen, (std::vector<std::string>{"127.0.0.1:443", "[::1]:443"}));
  EXPECT_EQ(cfg.tls_cert, "");
  EXPECT_EQ(cfg.tls_key, "");
  EXPECT_TRUE(cfg.http2);
  EXPECT_EQ(cfg.domain, "cove.localhost");
  EXPECT_EQ(cfg.state_dir, "/var/lib/cove");
  EXPECT_EQ(cfg.default_timeout_s, 300);
  EXPECT_TRUE(cfg.templates.empty());
  EXPECT_EQ(cfg.pause_cold_after_s, 300);
  EXPECT_EQ(cfg.paused_retention_s, 30 * 86400);
  EXPECT_EQ(cfg.criu_path, "");
}

TEST(Config, EveryKeyIsRead) {
  Config cfg = parse_config(R"(
api_listen = ["0.0.0.0:8080", "[::]:0"]
sandbox_listen = ["127.0.0.1:8081"]
tls_listen = ["0.0.0.0:8443", "[::1]:9443"]
tls_cert = "/etc/cove/edge.pem"
tls_key = "/etc/cove/edge.key"
http2 = false
domain = "sandbox.example.com:8443"
state_dir = "/srv/cove"
agent_path = "/usr/lib/cove/cove-agent"
default_timeout_s = 60
max_timeout_s = 3600
pids_max = 512
max_sandboxes = 200
bridge = "covebr.1"
subnet = "192.168.0.0/24"
pause_cold_after_s = 45
paused_retention_s = 86400
criu_path = "/opt/criu/sbin/criu"

[templates.base]
rootfs = "/var/lib/cove/rootfs/base"
aliases = ["debian", "base-v1"]
cpu_count = 4
memory_mb = 1_024
disk_size_mb = 4096

[templates.tiny]
rootfs = "/var/lib/cove/rootfs/tiny"
)");
  EXPECT_EQ(cfg.api_listen, (std::vector<std::string>{"0.0.0.0:8080", "[::]:0"}));
  EXPECT_EQ(cfg.sandbox_listen, (std::vector<std::string>{"127.0.0.1:8081"}));
  EXPECT_EQ(cfg.tls_listen, (std::vector<std::string>{"0.0.0.0:8443", "[::1]:9443"}));
  EXPECT_EQ(cfg.tls_cert, "/etc/cove/edge.pem");
  EXPECT_EQ(cfg.tls_key, "/etc/cove/edge.key");
  EXPECT_FALSE(cfg.http2);
  EXPECT_EQ(cfg.domain, "sandbox.example.com:8443");
  EXPECT_EQ(cfg.state_dir, "/srv/cove");
  EXPECT_EQ(cfg.agent_path, "/usr/lib/cove/cove-agent");
  EXPECT_EQ(cfg.default_timeout_s, 60);
  EXPECT_EQ(cfg.max_timeout_s, 3600);
  EXPECT_EQ(cfg.pids_max, 512);
  EXPECT_EQ(cfg.max_sandboxes, 200);
  EXPECT_EQ(cfg.bridge, "covebr.1");
  EXPECT_EQ(cfg.subnet, "192.168.0.0/24");
  EXPECT_EQ(cfg.pause_cold_after_s, 45);
  EXPECT_EQ(cfg.paused_retention_s, 86400);
  EXPECT_EQ(cfg.criu_path, "/opt/criu/sbin/criu");
  ASSERT_EQ(cfg.templates.size(), 2u);
  EXPECT_EQ(cfg.templates[0].id, "base");
  EXPECT_EQ(cfg.templates[0].rootfs, "/var/lib/cove/rootfs/base");
  EXPECT_EQ(cfg.templates[0].aliases, (std::vector<std::string>{"debian", "base-v1"}));
  EXPECT_EQ(cfg.templates[0].cpu_count, 4);
  EXPECT_EQ(cfg.templates[0].memory_mb, 1024);
  EXPECT_EQ(cfg.templates[0].disk_size_mb, 4096);
  EXPECT_EQ(cfg.templates[1].id, "tiny");
  EXPECT_EQ(cfg.templates[1].cpu_count, 2);
  EXPECT_EQ(cfg.templates[1].memory_mb, 512);
  EXPECT_EQ(cfg.templates[1].disk_size_mb, 2048);
  EXPECT_TRUE(cfg.templates[1].aliases.empty());
}

TEST(Config, BaseRootfsShorthandAddsTheBaseTemplate) {
  Config cfg = parse_config("base_rootfs = \"/var/cache/cove/rootfs/base-abc\"\n[templates.other]\nrootfs = \"/o\"\n");
  ASSERT_EQ(cfg.templates.size(), 2u);
  EXPECT_EQ(cfg.templates[0].id, "base");
  EXPECT_EQ(cfg.templates[0].rootfs, "/var/cache/cove/rootfs/base-abc");
  EXPECT_EQ(cfg.templates[0].cpu_count, 2);
  EXPECT_EQ(cfg.templates[1].id, "other");
  expect_error("base_rootfs = \"/a\"\n[templates.base]\nrootfs = \"/b\"\n", "line 2: templates.base:",
               "base_rootfs (line 1)");
}

TEST(Config, UnknownKeysAreRejectedWithASuggestion) {
  expect_error("pids_mx = 10\n", "line 1: pids_mx: unknown key", "did you mean 'pids_max'");
  expect_error("\nfrobnicate = true\n", "line 2: frobnicate: unknown key");
  expect_error("[templates.base]\nrootfs = \"/r\"\nmemory = 512\n", "line 3: templates.base.memory: unknown key",
               "memory_mb");
  expect_error("[server]\nport = 1\n", "line 1: server: unknown key");
}

TEST(Config, UnknownKeysSuggestThePauseSettings) {
  expect_error("pause_cold_after = 5\n", "line 1: pause_cold_after: unknown key", "did you mean 'pause_cold_after_s'");
  expect_error("paused_retention = 60\n", "line 1: paused_retention: unknown key",
               "did you mean 'paused_retention_s'");
  expect_error("criu = \"/usr/sbin/criu\"\n", "line 1: criu: unknown key", "did you mean 'criu_path'");
  expect_error("criu_pth = \"/usr/sbin/criu\"\n", "line 1: criu_pth: unknown key", "did you mean 'criu_path'");
}

TEST(Config, PauseSettings) {
  // 0: a pause goes to disk at once.
  EXPECT_EQ(parse_config("pause_cold_after_s = 0").pause_cold_after_s, 0);
  EXPECT_EQ(parse_config("pause_cold_after_s = 2678400").pause_cold_after_s, 2678400);
  expect_error("pause_cold_after_s = -1", "line 1: pause_cold_after_s: must be between 0 and 2678400");
  expect_error("pause_cold_after_s = 2678401", "line 1: pause_cold_after_s: must be between 0 and 2678400");
  expect_error("pause_cold_after_s = \"5m\"", "line 1: pause_cold_after_s: must be an integer, not a string");

  EXPECT_EQ(parse_config("paused_retention_s = 60").paused_retention_s, 60);
  EXPECT_EQ(parse_config("paused_retention_s = 315360000").paused_retention_s, 315360000);
  expect_error("paused_retention_s = 59", "line 1: paused_retention_s: must be between 60 and 315360000");
  expect_error("paused_retention_s = 315360001", "line 1: paused_retention_s: must be between 60 and 315360000");
  expect_error("paused_retention_s = true", "line 1: paused_retention_s: must be an integer, not a boolean");

  EXPECT_EQ(parse_config("criu_path = \"\"").criu_path, "");  // "" = the one tools/criu.sh builds
  EXPECT_EQ(parse_config("criu_path = \"/usr/local/sbin/criu\"").criu_path, "/usr/local/sbin/criu");
  expect_error("criu_path = \"sbin/criu\"", "line 1: criu_path: must be an absolute path");
  expect_error("criu_path = 4", "line 1: criu_path: must be a string, not an integer");
  EXPECT_EQ(error_of("criu_path = \"secret-relative\"").find("secret-relative"), std::string::npos);
}

TEST(Config, WrongTypesAreRejected) {
  expect_error("pids_max = \"4096\"\n", "line 1: pids_max: must be an integer, not a string");
  expect_error("domain = 5\n", "line 1: domain: must be a string, not an integer");
  expect_error("api_listen = \"127.0.0.1:3000\"\n", "line 1: api_listen: must be an array of strings");
  expect_error("api_listen = [\n  \"127.0.0.1:1\",\n  2,\n]\n", "line 3: api_listen: must be an array of strings");
  expect_error("templates = 1\n", "line 1: templates: must be a table");
  expect_error("[templates]\nbase = 'x'\n", "line 2: templates.base: must be a table");
  expect_error("[templates.base]\nrootfs = \"/r\"\naliases = \"a\"\n", "line 3: templates.base.aliases:");
  expect_error("bridge = true\n", "line 1: bridge: must be a string, not a boolean");
  expect_error("http2 = \"yes\"\n", "line 1: http2: must be a boolean, not a string");
  expect_error("http2 = 1\n", "line 1: http2: must be a boolean, not an integer");
  expect_error("tls_listen = \"127.0.0.1:443\"\n", "line 1: tls_listen: must be an array of strings");
  expect_error("tls_cert = 5\ntls_key = \"/k\"\n", "line 1: tls_cert: must be a string, not an integer");
}

TEST(Config, TomlSyntaxErrorsKeepTheirLine) {
  expect_error("a = 1\nb = \"unterminated\n", "line 2: ", "unterminated string");
  expect_error("pids_max = 10\npids_max = 20\n", "line 2: ", "duplicate key pids_max");
}

TEST(Config, ListenAddresses) {
  for (auto good : {"127.0.0.1:0", "0.0.0.0:65535", "[::1]:3000", "[::]:80", "[fe80::1:2]:1", "10.0.0.255:443"}) {
    EXPECT_EQ(error_of("api_listen = [\"" + std::string(good) + "\"]"), "") << good;
  }
  for (auto bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "localhost:3000", "::1:3000",
                   "[::1]", "[]:80", "[::1:80", "1.2.3:80", "1.2.3.256:80", "01.2.3.4:80", "1.2.3.4:080",
                   "[::1%eth0]:80", " 1.2.3.4:80", "1.2.3.4:80 "}) {
    for (std::string key : {"api_listen", "sandbox_listen", "tls_listen"}) {
      expect_error(key + " = [\"" + std::string(bad) + "\"]", "line 1: " + key + ": '" + std::string(bad) + "'");
    }
  }
  // An empty list turns that listener off.
  EXPECT_EQ(parse_config("sandbox_listen = []").sandbox_listen, std::vector<std::string>{});
  EXPECT_EQ(parse_config("api_listen = []").api_listen, std::vector<std::string>{});
  EXPECT_EQ(parse_config("tls_listen = []").tls_listen, std::vector<std::string>{});
  expect_error("api_listen = ['1.2.3.4:5', '1.2.3.4:5']", "line 1: api_listen:", "listed twice");
  expect_error("tls_listen = ['[::1]:443', '[::1]:443']", "line 1: tls_listen:", "listed twice");
  expect_error("api_listen = ['1.2.3.4:5']\nsandbox_listen = ['1.2.3.4:5']\n", "line 2: sandbox_listen:",
               "also in api_listen");
  EXPECT_EQ(error_of("api_listen = ['127.0.0.1:0']\nsandbox_listen = ['127.0.0.1:0']\n"), "");
}

TEST(Config, ParsedListenAddressesGiveHostAndPort) {
  auto v4 = parse_listen_address("10.1.2.3:3000");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "10.1.2.3");
  EXPECT_EQ(v4->port, 3000);
  EXPECT_FALSE(v4->ipv6);
  auto v6 = parse_listen_address("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  EXPECT_TRUE(v6->ipv6);
}

TEST(Config, Domain) {
  for (auto good : {"localhost", "e2b.local", "sandbox.example.com:3001", "a-b.c0", "127.0.0.1.nip.io"}) {
    EXPECT_EQ(error_of("domain = \"" + std::string(good) + "\""), "") << good;
  }
  for (auto bad : {"-a.com", "a-.com", "a..com", ".com", "com.", "http://x.com", "x.com:0", "x.com:70000", "x.com:",
                   "x_y.com", "x.com/path", "a b"}) {
    expect_error("domain = \"" + std::string(bad) + "\"", "line 1: domain: must be a host name");
  }
  expect_error("domain = \"" + std::string(64, 'a') + ".com\"", "line 1: domain:");
  // Empty (clients told null) only without the TLS edge, which routes by host name.
  EXPECT_EQ(error_of("tls_listen = []\ndomain = \"\"\n"), "");
  EXPECT_EQ(parse_config("tls_listen = []\ndomain = \"\"\n").domain, "");
}

TEST(Config, TlsEdge) {
  // Certificate and key: both or neither.
  Config both = parse_config("tls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\n");
  EXPECT_EQ(both.tls_cert, "/c.pem");
  EXPECT_EQ(both.tls_key, "/k.pem");
  EXPECT_EQ(error_of("tls_cert = \"\"\ntls_key = \"\"\n"), "");
  expect_error("tls_cert = \"/c.pem\"\n", "line 1: tls_key: tls_cert and tls_key go together");
  expect_error("\ntls_key = \"/k.pem\"\n", "line 2: tls_cert: tls_cert and tls_key go together");
  expect_error("tls_cert = \"/c.pem\"\ntls_key = \"\"\n", "line 1: tls_key: tls_cert and tls_key go together");
  expect_error("tls_cert = \"c.pem\"\ntls_key = \"/k.pem\"\n", "line 1: tls_cert: must be an absolute path");
  expect_error("tls_cert = \"/c.pem\"\ntls_key = \"k.pem\"\n", "line 2: tls_key: must be an absolute path");

  EXPECT_TRUE(parse_config("http2 = true").http2);
  EXPECT_FALSE(parse_config("http2 = false").http2);
  expect_error("http2 = \"yes\"", "line 1: http2: must be a boolean");

  // The edge routes by host name.
  expect_error("tls_listen = [\"127.0.0.1:8443\"]\ndomain = \"\"\n", "line 2: domain:", "needs a domain");
  expect_error("domain = \"\"\n", "line 1: domain:", "needs a domain");

  // Something must serve the API.
  expect_error("api_listen = []\ntls_listen = []\n", "line 1: api_listen:", "nothing would serve the API");
  expect_error("tls_listen = []\napi_listen = []\n", "line 2: api_listen:", "nothing would serve the API");
  Config tls_only = parse_config("api_listen = []\nsandbox_listen = []\n");
  EXPECT_TRUE(tls_only.api_listen.empty());
  EXPECT_EQ(tls_only.tls_listen, Config{}.tls_listen);
  Config plain_only = parse_config("tls_listen = []\n");
  EXPECT_TRUE(plain_only.tls_listen.empty());
  EXPECT_EQ(plain_only.api_listen, Config{}.api_listen);

  // One address is one listener.
  expect_error("api_listen = ['127.0.0.1:8443']\ntls_listen = ['127.0.0.1:8443']\n", "line 2: tls_listen:",
               "'127.0.0.1:8443' is also a plain-HTTP listener");
  expect_error("tls_listen = ['[::1]:8443']\nsandbox_listen = ['[::1]:8443']\n", "line 1: tls_listen:",
               "'[::1]:8443' is also a plain-HTTP listener");
  // ...also against the default tls_listen, which the file does not mention (hence no line).
  expect_error("api_listen = ['127.0.0.1:443']\n", "tls_listen:", "'127.0.0.1:443' is also a plain-HTTP listener");
  // Port 0 picks a fresh port each time, so it never clashes.
  EXPECT_EQ(error_of("api_listen = ['127.0.0.1:0']\ntls_listen = ['127.0.0.1:0']\n"), "");
  EXPECT_EQ(error_of("api_listen = ['127.0.0.1:3000']\ntls_listen = ['127.0.0.1:3443']\n"), "");
}

TEST(Config, Paths) {
  expect_error("state_dir = \"var/lib/cove\"", "line 1: state_dir: must be an absolute path");
  expect_error("state_dir = \"\"", "line 1: state_dir: must be an absolute path");
  expect_error("agent_path = \"./cove-agent\"", "line 1: agent_path: must be an absolute path");
  expect_error("base_rootfs = \"rootfs\"", "line 1: base_rootfs: must be an absolute path");
  expect_error("[templates.base]\nrootfs = \"rel/dir\"\n", "line 2: templates.base.rootfs: must be an absolute path");
  // The path itself is not echoed.
  EXPECT_EQ(error_of("state_dir = \"secret-relative-path\"").find("secret-relative-path"), std::string::npos);
}

TEST(Config, NumericLimits) {
  EXPECT_EQ(error_of("default_timeout_s = 1\nmax_timeout_s = 2678400\n"), "");
  expect_error("default_timeout_s = 0", "line 1: default_timeout_s: must be between 1 and 2678400 (got 0)");
  expect_error("max_timeout_s = 2678401", "line 1: max_timeout_s: must be between 1 and 2678400");
  expect_error("max_timeout_s = -5", "line 1: max_timeout_s: must be between");
  expect_error("default_timeout_s = 600\nmax_timeout_s = 300\n", "line 1: default_timeout_s:",
               "must not exceed max_timeout_s (300)");
  expect_error("max_timeout_s = 100\n", "line 1: default_timeout_s:", "must not exceed max_timeout_s (100)");
  expect_error("pids_max = 0", "line 1: pids_max: must be between");
  expect_error("pids_max = 4194305", "line 1: pids_max: must be between");
  expect_error("pids_max = 9999999999999", "line 1: pids_max: must be between");
  expect_error("max_sandboxes = 0", "line 1: max_sandboxes: must be between 1 and");
  expect_error("max_sandboxes = 100001", "line 1: max_sandboxes: must be between 1 and");
}

TEST(Config, TemplateLimits) {
  auto tpl = [](const std::string& line) { return "[templates.t]\nrootfs = \"/r\"\n" + line + "\n"; };
  EXPECT_EQ(error_of(tpl("cpu_count = 1\nmemory_mb = 128\ndisk_size_mb = 256")), "");
  EXPECT_EQ(error_of(tpl("cpu_count = 64\nmemory_mb = 65536\ndisk_size_mb = 1048576")), "");
  expect_error(tpl("cpu_count = 0"), "line 3: templates.t.cpu_count: must be between 1 and 64");
  expect_error(tpl("cpu_count = 65"), "line 3: templates.t.cpu_count: must be between 1 and 64");
  expect_error(tpl("memory_mb = 127"), "line 3: templates.t.memory_mb: must be between 128 and 65536");
  expect_error(tpl("memory_mb = 65537"), "line 3: templates.t.memory_mb:");
  expect_error(tpl("disk_size_mb = 255"), "line 3: templates.t.disk_size_mb: must be between 256 and 1048576");
  expect_error(tpl("disk_size_mb = 1048577"), "line 3: templates.t.disk_size_mb:");
  expect_error("[templates.t]\ncpu_count = 2\n", "line 1: templates.t: needs a rootfs");
}

TEST(Config, TemplateIdsAndAliases) {
  for (auto good : {"base", "code-interpreter", "a_b", "0x", "t1"}) {
    EXPECT_EQ(error_of("[templates." + std::string(good) + "]\nrootfs = \"/r\"\n"), "") << good;
  }
  for (auto bad : {"\"Base\"", "\"-x\"", "\"_x\"", "\"a.b\"", "\"\"", "\"a b\""}) {
    expect_error("[templates." + std::string(bad) + "]\nrootfs = \"/r\"\n", "line 1: templates.",
                 "template ids are");
  }
  expect_error("[templates." + std::string(65, 'a') + "]\nrootfs = \"/r\"\n", "line 1: templates.", "at most 64");
  expect_error("[templates.t]\nrootfs = \"/r\"\naliases = [\"Bad\"]\n", "line 3: templates.t.aliases:",
               "not a valid alias");
  expect_error("[templates.a]\nrootfs = \"/r\"\naliases = [\"x\"]\n[templates.b]\nrootfs = \"/r\"\naliases = [\"x\"]\n",
               "line 6: templates.b.aliases:", "'x' already names template 'a'");
  expect_error("[templates.a]\nrootfs = \"/r\"\n[templates.b]\nrootfs = \"/r\"\naliases = [\"a\"]\n",
               "line 5: templates.b.aliases:", "'a' already names template 'a'");
  expect_error("[templates.a]\nrootfs = \"/r\"\naliases = [\"x\", \"x\"]\n", "line 3: templates.a.aliases:",
               "listed twice");
  EXPECT_EQ(error_of("[templates.a]\nrootfs = \"/r\"\naliases = [\"a\"]\n"), "");
}

TEST(Config, BridgeName) {
  for (auto good : {"cove0", "br-cove", "a", "x.y_z-1", "abcdefghijklmno"}) {
    EXPECT_EQ(error_of("bridge = \"" + std::string(good) + "\""), "") << good;
  }
  for (auto bad : {"", "abcdefghijklmnop", "br/0", "br 0", "br:0", ".", ".."}) {
    expect_error("bridge = \"" + std::string(bad) + "\"", "line 1: bridge: must be an interface name");
  }
}

TEST(Config, Subnet) {
  for (auto good : {"10.0.0.0/8", "172.16.0.0/12", "192.168.7.0/24", "10.88.0.0/16"}) {
    EXPECT_EQ(error_of("subnet = \"" + std::string(good) + "\"\nmax_sandboxes = 100\n"), "") << good;
  }
  for (auto bad : {"10.88.0.1/16", "10.88.0.0", "10.88.0.0/", "10.88.0.0/33", "10.88.0/16", "fd00::/64",
                   "10.88.0.0/016", "10.088.0.0/16"}) {
    expect_error("subnet = \"" + std::string(bad) + "\"", "line 1: subnet: must be an IPv4 network");
  }
  expect_error("subnet = \"10.0.0.0/7\"", "line 1: subnet: prefix length must be between 8 and 24");
  expect_error("subnet = \"10.0.0.0/25\"", "line 1: subnet: prefix length must be between 8 and 24");
  // A /24 holds 253 sandboxes (network, bridge and broadcast addresses excluded).
  EXPECT_EQ(error_of("subnet = \"10.0.0.0/24\"\nmax_sandboxes = 253\n"), "");
  expect_error("subnet = \"10.0.0.0/24\"\nmax_sandboxes = 254\n", "line 2: max_sandboxes:", "253");
  expect_error("subnet = \"10.0.0.0/24\"\n", "line 1: max_sandboxes:", "253");
}

TEST(Config, ExampleFileParsesToTheDefaults) {
  Config cfg = load_config(COVE_SHIM_CONFIG_EXAMPLE);
  expect_same(cfg, Config{});
  // Spelled out, so a changed default cannot pass by changing both sides.
  EXPECT_EQ(cfg.tls_listen, (std::vector<std::string>{"127.0.0.1:443", "[::1]:443"}));
  EXPECT_TRUE(cfg.http2);
  EXPECT_EQ(cfg.domain, "cove.localhost");
  EXPECT_TRUE(cfg.tls_cert.empty());
  EXPECT_TRUE(cfg.tls_key.empty());
}

TEST(Config, ExampleTemplateBlockIsValidWhenUncommented) {
  std::ifstream in(COVE_SHIM_CONFIG_EXAMPLE);
  ASSERT_TRUE(in);
  std::stringstream text;
  std::string line;
  bool in_block = false;
  while (std::getline(in, line)) {
    if (line.rfind("# [templates.", 0) == 0) in_block = true;
    if (in_block && line.rfind("# ", 0) == 0) line = line.substr(2);
    text << line << "\n";
  }
  ASSERT_TRUE(in_block) << "the example no longer shows a template";
  Config cfg = parse_config(text.str());
  ASSERT_EQ(cfg.templates.size(), 1u);
  EXPECT_EQ(cfg.templates[0].id, "code-interpreter");
  EXPECT_EQ(cfg.templates[0].aliases, std::vector<std::string>{"code-interpreter-v1"});
  // The example shows the defaults.
  EXPECT_EQ(cfg.templates[0].cpu_count, TemplateConfig{}.cpu_count);
  EXPECT_EQ(cfg.templates[0].memory_mb, TemplateConfig{}.memory_mb);
  EXPECT_EQ(cfg.templates[0].disk_size_mb, TemplateConfig{}.disk_size_mb);
}

TEST(Config, LoadConfigReadsAFileAndReportsMissingOnes) {
  test::ScratchDir dir;
  std::ofstream(dir / "cove.toml") << "pids_max = 100\n";
  EXPECT_EQ(load_config(dir / "cove.toml").pids_max, 100);
  try {
    load_config(dir / "missing.toml");
    FAIL() << "a missing file loaded";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open the config file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cove::shim
