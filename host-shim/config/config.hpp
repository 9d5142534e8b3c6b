#pragma once
// `cove serve --config cove.toml`: what an operator may set, with defaults, and its validation.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace cove::shim {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TemplateConfig {
  std::string id;                  // [a-z0-9][a-z0-9_-]*
  std::vector<std::string> aliases;
  std::string rootfs;              // host directory with the root filesystem
  int cpu_count = 2;
  int memory_mb = 512;
  int disk_size_mb = 2048;
};

struct Config {
  // Plain-HTTP listeners (E2B_API_URL / E2B_SANDBOX_URL style). "host:port"; port 0 = any.
  std::vector<std::string> api_listen = {"127.0.0.1:3000", "[::1]:3000"};
  std::vector<std::string> sandbox_listen = {"127.0.0.1:3001", "[::1]:3001"};
  // The TLS edge: api.<domain>, <port>-<id>.<domain> and sandbox.<domain> on one listener.
  std::vector<std::string> tls_listen = {"127.0.0.1:443", "[::1]:443"};
  // PEM chain and key for *.<domain> and api.<domain>; both empty → a local CA in state_dir.
  std::string tls_cert;
  std::string tls_key;
  bool http2 = true;               // offer h2 through ALPN (http/1.1 is always offered)
  std::string domain = "cove.localhost";  // returned in `domain`, optionally with :port; empty → null
  std::string state_dir = "/var/lib/cove";
  std::string agent_path;          // the static cove-agent to install into every sandbox
  std::string registry_ca;         // extra CA bundle (PEM) trusted for image pulls; "" = system store only
  int max_concurrent_builds = 1;   // template builds running at once; the rest queue
  std::string layers_dir;          // template layers ("" = <state_dir>/layers); shareable between shims
  int64_t default_timeout_s = 300; // when a create omits `timeout` (v1 body: E2B's 15 is too short for users of older SDKs)
  int64_t max_timeout_s = 86400;   // longest lifetime a create/timeout/connect may ask for
  int pids_max = 4096;
  int64_t pause_cold_after_s = 300;      // a paused sandbox's memory goes to disk (CRIU) after this; 0 = at once
  int64_t paused_retention_s = 2592000;  // a paused sandbox is killed after this (30 days)
  std::string criu_path;                 // CRIU 4.2.x ("" = what tools/criu.sh builds)
  int max_sandboxes = 1000;        // running at once on this node
  std::string bridge = "cove0";
  std::string subnet = "10.88.0.0/16";  // sandboxes' addresses; .0.1 is the bridge
  std::vector<TemplateConfig> templates;  // `base` is added from `base_rootfs` when missing
  std::string base_rootfs;         // [templates.base] rootfs shorthand
};

// Parses the TOML text (the subset documented in docs/ARCHITECTURE.md) and validates it.
// Unknown keys, wrong types and bad values throw ConfigError naming the key and line.
Config parse_config(const std::string& toml_text);
Config load_config(const std::string& path);

}  // namespace cove::shim
