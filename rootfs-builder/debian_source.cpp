#include "rootfs-builder/debian_source.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "rootfs-builder/build_plan.hpp"
#include "rootfs-builder/child_process.hpp"

namespace cove::builder {
namespace {

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& word) {
  for (const auto& w : list) {
    if (w == word) return true;
  }
  return false;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// deb822: stanzas of "Key: value" lines (continuations indented), separated by blank lines.
std::string mirror_from_deb822(const std::string& path, const std::string& suite) {
  std::ifstream in(path);
  if (!in) return {};
  std::vector<std::pair<std::string, std::string>> fields;
  auto stanza_mirror = [&]() -> std::string {
    std::string types, suites, uris, enabled;
    for (const auto& [k, v] : fields) {
      if (k == "types") types += " " + v;
      if (k == "suites") suites += " " + v;
      if (k == "uris") uris += " " + v;
      if (k == "enabled") enabled = lower(v);
    }
    fields.clear();
    if (enabled.find("no") != std::string::npos) return {};
    if (!contains(words(types), "deb") || !contains(words(suites), suite)) return {};
    auto u = words(uris);
    return u.empty() ? std::string() : u.front();
  };
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '#') continue;
    if (line.find_first_not_of(" \t") == std::string::npos) {
      if (auto m = stanza_mirror(); !m.empty()) return m;
      continue;
    }
    if (line[0] == ' ' || line[0] == '\t') {
      if (!fields.empty()) fields.back().second += " " + line;
      continue;
    }
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    fields.emplace_back(lower(line.substr(0, colon)), line.substr(colon + 1));
  }
  return stanza_mirror();
}

// "deb [options] URI SUITE components…"
std::string mirror_from_sources_list(const std::string& path, const std::string& suite) {
  std::ifstream in(path);
  if (!in) return {};
  std::string line;
  while (std::getline(in, line)) {
    if (auto open = line.find('['); open != std::string::npos) {
      auto close = line.find(']', open);
      if (close != std::string::npos) line.erase(open, close - open + 1);
    }
    auto w = words(line);
    if (w.size() >= 3 && w[0] == "deb" && w[2] == suite) return w[1];
  }
  return {};
}

bool valid_mirror(const std::string& mirror) {
  if (mirror.rfind("http://", 0) != 0 && mirror.rfind("https://", 0) != 0) return false;
  for (char c : mirror) {
    if (c <= ' ' || c == '\'' || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

bool valid_suite(const std::string& suite) {
  if (suite.empty() || suite.size() > 32) return false;
  for (char c : suite) {
    if (c < 'a' || c > 'z') return false;
  }
  return true;
}

std::string host_debian_mirror(const std::string& suite, const std::string& deb822, const std::string& one_line) {
  std::string m = mirror_from_deb822(deb822, suite);
  if (m.empty()) m = mirror_from_sources_list(one_line, suite);
  return m;
}

std::string debian_layer(const DebianSource& source, const LayerStore& layers,
                         const std::function<void(const std::string&)>& log, const std::atomic<bool>& cancel) {
  if (!valid_suite(source.suite)) throw std::runtime_error("fromDebian: invalid suite name");
  std::string mirror = source.mirror.empty() ? host_debian_mirror(source.suite) : source.mirror;
  if (mirror.empty()) throw std::runtime_error("fromDebian: no '" + source.suite + "' source in the host's apt configuration");
  if (!valid_mirror(mirror)) throw std::runtime_error("fromDebian: the mirror must be an http(s) URL");
  // Version 1 of this recipe: debootstrap minbase plus /etc/hosts.
  std::string key = base_layer_key({"debian/1", "minbase", source.suite, mirror});
  if (layers.has(key)) {
    log("Debian " + source.suite + " minbase: cached [" + key.substr(0, 12) + "]");
    return layers.path(key);
  }
  log("Debian " + source.suite + " minbase: debootstrap from " + mirror);
  std::string staging = layers.make_staging();
  std::string tree = staging + "/tree";
  std::string log_path = staging + ".log";
  // A private mount namespace: debootstrap's own /proc and /sys mounts can never stay behind.
  int rc = run_cancellable({"unshare", "--mount", "--propagation", "private", "debootstrap", "--variant=minbase", source.suite,
                tree, mirror},
               log_path, cancel);
  if (rc != 0) {
    std::string tail;
    {
      std::ifstream in(log_path);
      std::string line;
      while (std::getline(in, line)) tail = line;  // the last line says why
    }
    layers.discard(staging);
    ::unlink(log_path.c_str());
    throw std::runtime_error("debootstrap failed (exit " + std::to_string(rc) + ")" + (tail.empty() ? "" : ": " + tail));
  }
  ::unlink(log_path.c_str());
  // minbase ships no /etc/hosts; without it "localhost" would go to DNS.
  std::string hosts = tree + "/etc/hosts";
  if (::access(hosts.c_str(), F_OK) != 0) {
    std::ofstream(hosts) << "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
  }
  std::string path = layers.publish(tree, key);
  layers.discard(staging);
  return path;
}

}  // namespace cove::builder
