#include "config/config.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>

#include "config/toml.hpp"
#include "config/values.hpp"

namespace cove::shim {
namespace {

using toml::Value;

constexpr int64_t kDay = 86400;
constexpr int64_t kMaxTimeout = 31 * kDay;
constexpr size_t kMaxConfigBytes = 1 << 20;

// Messages name the key and its line; values that are host paths are not repeated.
[[noreturn]] void fail(int line, const std::string& key, const std::string& message) {
  std::string where = line > 0 ? "line " + std::to_string(line) + ": " : "";
  throw ConfigError(where + key + ": " + message);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

[[noreturn]] void unknown_key(int line, const std::string& prefix, const std::string& key,
                              std::initializer_list<std::string_view> known) {
  std::string message = "unknown key";
  for (auto k : known) {
    // A near miss, or a key cut short ("memory" for "memory_mb").
    if (edit_distance(key, k) <= 2 || (key.size() >= 4 && k.starts_with(key))) {
      message += " (did you mean '" + std::string(k) + "'?)";
      break;
    }
  }
  fail(line, prefix + key, message);
}

void expect(const Value& v, Value::Kind kind, const std::string& key) {
  if (v.kind != kind) {
    fail(v.line, key, "must be " + std::string(kind == Value::Kind::integer ? "an " : "a ") +
                          std::string(toml::kind_name(kind)) + ", not " + (v.kind == Value::Kind::integer ? "an " : "a ") +
                          std::string(toml::kind_name(v.kind)));
  }
}

std::string get_string(const Value& v, const std::string& key) {
  expect(v, Value::Kind::string, key);
  return v.string;
}

int64_t get_int(const Value& v, const std::string& key, int64_t min, int64_t max) {
  expect(v, Value::Kind::integer, key);
  if (v.integer < min || v.integer > max) {
    fail(v.line, key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + " (got " +
                          std::to_string(v.integer) + ")");
  }
  return v.integer;
}

std::vector<std::string> get_string_array(const Value& v, const std::string& key) {
  if (v.kind != Value::Kind::array) fail(v.line, key, "must be an array of strings");
  std::vector<std::string> out;
  for (const auto& item : v.items) {
    if (item.kind != Value::Kind::string) fail(item.line, key, "must be an array of strings");
    out.push_back(item.string);
  }
  return out;
}

std::string get_absolute_path(const Value& v, const std::string& key, bool allow_empty) {
  std::string path = get_string(v, key);
  if (path.empty() && allow_empty) return path;
  if (path.empty() || path.front() != '/') fail(v.line, key, "must be an absolute path");
  if (path.find('\0') != std::string::npos) fail(v.line, key, "must not contain NUL");
  return path;
}

bool get_bool(const Value& v, const std::string& key) {
  expect(v, Value::Kind::boolean, key);
  return v.boolean;
}

// An empty list turns that listener off.
std::vector<std::string> get_listen(const Value& v, const std::string& key) {
  auto addresses = get_string_array(v, key);
  std::set<std::string> seen;
  for (const auto& a : addresses) {
    if (!parse_listen_address(a)) {
      fail(v.line, key, "'" + a + "' is not an address with a port (\"127.0.0.1:3000\", \"[::1]:3000\")");
    }
    if (!seen.insert(a).second) fail(v.line, key, "'" + a + "' is listed twice");
  }
  return addresses;
}

TemplateConfig parse_template(const std::string& id, const Value& table) {
  std::string prefix = "templates." + id;
  if (!is_valid_template_name(id)) {
    fail(table.line, prefix, "template ids are [a-z0-9][a-z0-9_-]* (at most 64 characters)");
  }
  if (!table.is_table()) fail(table.line, prefix, "must be a table ([" + prefix + "])");
  TemplateConfig tpl;
  tpl.id = id;
  bool has_rootfs = false;
  for (size_t i = 0; i < table.keys.size(); ++i) {
    const std::string& k = table.keys[i];
    const Value& v = table.items[i];
    std::string key = prefix + "." + k;
    if (k == "rootfs") {
      tpl.rootfs = get_absolute_path(v, key, false);
      has_rootfs = true;
    } else if (k == "aliases") {
      tpl.aliases = get_string_array(v, key);
      for (const auto& a : tpl.aliases) {
        if (!is_valid_template_name(a)) fail(v.line, key, "'" + a + "' is not a valid alias ([a-z0-9][a-z0-9_-]*)");
      }
    } else if (k == "cpu_count") {
      tpl.cpu_count = static_cast<int>(get_int(v, key, 1, 64));
    } else if (k == "memory_mb") {
      tpl.memory_mb = static_cast<int>(get_int(v, key, 128, 65536));
    } else if (k == "disk_size_mb") {
      tpl.disk_size_mb = static_cast<int>(get_int(v, key, 256, 1048576));
    } else {
      unknown_key(v.line, prefix + ".", k, {"rootfs", "aliases", "cpu_count", "memory_mb", "disk_size_mb"});
    }
  }
  if (!has_rootfs) fail(table.line, prefix, "needs a rootfs");
  return tpl;
}

}  // namespace

Config parse_config(const std::string& toml_text) {
  Value root;
  try {
    root = toml::parse(toml_text);
  } catch (const toml::ParseError& e) {
    throw ConfigError(e.what());
  }

  Config cfg;
  std::map<std::string, int> line_of;  // keys that were set, for cross-checks
  int templates_base_line = 0;
  for (size_t i = 0; i < root.keys.size(); ++i) {
    const std::string& k = root.keys[i];
    const Value& v = root.items[i];
    line_of[k] = v.line;
    if (k == "api_listen") {
      cfg.api_listen = get_listen(v, k);
    } else if (k == "sandbox_listen") {
      cfg.sandbox_listen = get_listen(v, k);
    } else if (k == "tls_listen") {
      cfg.tls_listen = get_listen(v, k);
    } else if (k == "tls_cert") {
      cfg.tls_cert = get_absolute_path(v, k, true);
    } else if (k == "tls_key") {
      cfg.tls_key = get_absolute_path(v, k, true);
    } else if (k == "http2") {
      cfg.http2 = get_bool(v, k);
    } else if (k == "domain") {
      cfg.domain = get_string(v, k);
      if (!cfg.domain.empty() && !is_valid_domain(cfg.domain)) {
        fail(v.line, k, "must be a host name, optionally with :port (\"sandbox.example.com\")");
      }
    } else if (k == "state_dir") {
      cfg.state_dir = get_absolute_path(v, k, false);
    } else if (k == "agent_path") {
      cfg.agent_path = get_absolute_path(v, k, true);
    } else if (k == "registry_ca") {
      cfg.registry_ca = get_absolute_path(v, k, true);
    } else if (k == "layers_dir") {
      cfg.layers_dir = get_absolute_path(v, k, true);
    } else if (k == "max_concurrent_builds") {
      cfg.max_concurrent_builds = static_cast<int>(get_int(v, k, 1, 64));
    } else if (k == "base_rootfs") {
      cfg.base_rootfs = get_absolute_path(v, k, true);
    } else if (k == "default_timeout_s") {
      cfg.default_timeout_s = get_int(v, k, 1, kMaxTimeout);
    } else if (k == "max_timeout_s") {
      cfg.max_timeout_s = get_int(v, k, 1, kMaxTimeout);
    } else if (k == "pause_cold_after_s") {
      cfg.pause_cold_after_s = get_int(v, k, 0, kMaxTimeout);
    } else if (k == "paused_retention_s") {
      cfg.paused_retention_s = get_int(v, k, 60, 10LL * 365 * 86400);
    } else if (k == "criu_path") {
      cfg.criu_path = get_absolute_path(v, k, true);
    } else if (k == "pids_max") {
      cfg.pids_max = static_cast<int>(get_int(v, k, 16, 4194304));
    } else if (k == "max_sandboxes") {
      cfg.max_sandboxes = static_cast<int>(get_int(v, k, 1, 100000));
    } else if (k == "bridge") {
      cfg.bridge = get_string(v, k);
      if (!is_valid_interface_name(cfg.bridge)) {
        fail(v.line, k, "must be an interface name: 1-15 characters of [A-Za-z0-9_.-]");
      }
    } else if (k == "subnet") {
      cfg.subnet = get_string(v, k);
      auto cidr = parse_ipv4_cidr(cfg.subnet);
      if (!cidr) fail(v.line, k, "must be an IPv4 network in CIDR form with host bits clear (\"10.88.0.0/16\")");
      if (cidr->prefix < 8 || cidr->prefix > 24) fail(v.line, k, "prefix length must be between 8 and 24");
    } else if (k == "templates") {
      if (!v.is_table()) fail(v.line, k, "must be a table of [templates.<id>] tables");
      for (size_t j = 0; j < v.keys.size(); ++j) {
        cfg.templates.push_back(parse_template(v.keys[j], v.items[j]));
        if (v.keys[j] == "base") templates_base_line = v.items[j].line;
      }
    } else {
      unknown_key(v.line, "", k,
                  {"api_listen", "sandbox_listen", "tls_listen", "tls_cert", "tls_key", "http2", "domain", "state_dir", "agent_path", "registry_ca", "max_concurrent_builds", "layers_dir", "base_rootfs",
                   "default_timeout_s", "max_timeout_s", "pids_max", "max_sandboxes", "bridge", "subnet",
                   "templates", "pause_cold_after_s", "paused_retention_s", "criu_path"});
    }
  }

  // Cross-checks.
  if (cfg.default_timeout_s > cfg.max_timeout_s) {
    int line = line_of.count("default_timeout_s") ? line_of["default_timeout_s"] : line_of["max_timeout_s"];
    fail(line, "default_timeout_s", "must not exceed max_timeout_s (" + std::to_string(cfg.max_timeout_s) + ")");
  }
  {
    // The subnet's network address, broadcast address and the bridge's .1 are not for sandboxes.
    auto cidr = parse_ipv4_cidr(cfg.subnet);
    int64_t usable = (int64_t{1} << (32 - cidr->prefix)) - 3;
    if (cfg.max_sandboxes > usable) {
      int line = line_of.count("max_sandboxes") ? line_of["max_sandboxes"] : line_of["subnet"];
      fail(line, "max_sandboxes",
           "exceeds the " + std::to_string(usable) + " sandbox addresses in subnet " + cfg.subnet);
    }
  }
  if (cfg.tls_cert.empty() != cfg.tls_key.empty()) {
    const char* missing = cfg.tls_cert.empty() ? "tls_cert" : "tls_key";
    int line = line_of.count("tls_cert") ? line_of["tls_cert"] : line_of["tls_key"];
    fail(line, missing, "tls_cert and tls_key go together: give both, or neither for a local CA");
  }
  if (!cfg.tls_listen.empty() && cfg.domain.empty()) {
    int line = line_of.count("domain") ? line_of["domain"] : line_of["tls_listen"];
    fail(line, "domain", "the TLS edge (tls_listen) routes by host name and needs a domain");
  }
  if (cfg.api_listen.empty() && cfg.tls_listen.empty()) {
    int line = line_of.count("api_listen") ? line_of["api_listen"] : line_of["tls_listen"];
    fail(line, "api_listen", "with tls_listen empty too, nothing would serve the API");
  }
  for (const auto& a : cfg.tls_listen) {
    auto parsed = parse_listen_address(a);
    bool clash = std::count(cfg.api_listen.begin(), cfg.api_listen.end(), a) != 0 ||
                 std::count(cfg.sandbox_listen.begin(), cfg.sandbox_listen.end(), a) != 0;
    if (parsed->port != 0 && clash) fail(line_of["tls_listen"], "tls_listen", "'" + a + "' is also a plain-HTTP listener");
  }
  for (const auto& a : cfg.api_listen) {
    auto parsed = parse_listen_address(a);
    if (parsed->port != 0 && std::count(cfg.sandbox_listen.begin(), cfg.sandbox_listen.end(), a) != 0) {
      int line = line_of.count("sandbox_listen") ? line_of["sandbox_listen"] : line_of["api_listen"];
      fail(line, "sandbox_listen", "'" + a + "' is also in api_listen");
    }
  }
  if (!cfg.base_rootfs.empty()) {
    if (templates_base_line != 0) {
      fail(templates_base_line, "templates.base", "base_rootfs (line " + std::to_string(line_of["base_rootfs"]) +
                                                      ") already defines it; keep one of the two");
    }
    TemplateConfig base;
    base.id = "base";
    base.rootfs = cfg.base_rootfs;
    cfg.templates.insert(cfg.templates.begin(), std::move(base));
  }
  // Every id and alias names one template.
  std::map<std::string, std::string> owner;  // name → template id
  for (const auto& t : cfg.templates) owner[t.id] = t.id;
  for (const auto& t : cfg.templates) {
    for (const auto& a : t.aliases) {
      auto [it, fresh] = owner.emplace(a, t.id);
      if (!fresh && !(it->second == t.id && a == t.id)) {
        int line = 0;
        if (const Value* templates = root.find("templates")) {
          if (const Value* tv = templates->find(t.id)) line = tv->find("aliases") ? tv->find("aliases")->line : tv->line;
        }
        std::string why = it->second == t.id ? "'" + a + "' is listed twice"
                                             : "'" + a + "' already names template '" + it->second + "'";
        fail(line, "templates." + t.id + ".aliases", why);
      }
    }
  }
  return cfg;
}

Config load_config(const std::string& path) {
  // The path is the operator's own argument; messages leave it to the caller to print.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ConfigError(std::string("cannot open the config file: ") + std::strerror(errno));
  std::string text;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw ConfigError(std::string("cannot read the config file: ") + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes) {
      ::close(fd);
      throw ConfigError("the config file is larger than 1 MiB");
    }
  }
  ::close(fd);
  return parse_config(text);
}

}  // namespace cove::shim
