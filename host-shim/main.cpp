// cove: the host shim's command line.
//   cove serve   [--config FILE]                 run the control plane, data plane and sandboxes
//   cove key create --team NAME [--config FILE]  print a new API key for the team (shown once)
//   cove token create --team NAME [--config FILE]  print a new access token (the CLI's E2B_ACCESS_TOKEN), once
//   cove sandbox list | kill ID [--config FILE]  every team's live sandboxes, through the admin socket
//   cove sandbox checkpoint ID [--config FILE]   move a paused sandbox's memory to disk now (cold pause)
//   cove template list [--config FILE]
//   cove template build DIR [--config FILE]      build DIR/template.json as a built-in template
//   cove network down [--config FILE]            remove the bridge and firewall chains (no sandboxes left)
//   cove version
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "auth/access_tokens.hpp"
#include "auth/api_keys.hpp"
#include "cli/admin.hpp"
#include "cli/serve.hpp"
#include "cli/template_build.hpp"
#include "config/config.hpp"
#include "runtime/container/network.hpp"
#include "store/store.hpp"

namespace {
using namespace cove::shim;

constexpr const char* kDefaultConfig = "/etc/cove/cove.toml";

int usage() {
  std::fputs(
      "usage: cove serve [--config FILE]\n"
      "       cove key create --team NAME [--config FILE]\n"
      "       cove token create --team NAME [--config FILE]\n"
      "       cove sandbox list [--config FILE]\n"
      "       cove sandbox kill ID [--config FILE]\n"
      "       cove sandbox checkpoint ID [--config FILE]\n"
      "       cove template list [--config FILE]\n"
      "       cove template build DIR [--config FILE]\n"
      "       cove network down [--config FILE]\n"
      "       cove version\n",
      stderr);
  return 2;
}

struct Args {
  std::vector<std::string> words;
  std::map<std::string, std::string> options;
};

std::optional<Args> parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      auto eq = a.find('=');
      if (eq != std::string::npos) {
        args.options[a.substr(2, eq - 2)] = a.substr(eq + 1);
      } else if (i + 1 < argc) {
        args.options[a.substr(2)] = argv[++i];
      } else {
        return std::nullopt;
      }
    } else {
      args.words.push_back(a);
    }
  }
  for (auto& [k, v] : args.options) {
    if (k != "config" && k != "team") return std::nullopt;
  }
  return args;
}

Config config_from(const Args& args) {
  auto it = args.options.find("config");
  if (it != args.options.end()) return load_config(it->second);
  if (std::filesystem::exists(kDefaultConfig)) return load_config(kDefaultConfig);
  return parse_config("");
}

// Prints a new team credential once on stdout (the store keeps only what `add` stores: its hash
// and mask) and names its mask and team on stderr. The team is made on first use.
int issue_credential(const Config& config, const std::string& team_name, const char* what,
                     const std::string& secret, const std::string& mask,
                     const std::function<void(Store&, const std::string& team_id)>& add) {
  std::filesystem::create_directories(config.state_dir);
  auto store = open_sqlite_store(config.state_dir + "/cove.db");
  Team team = store->ensure_team(team_name);
  add(*store, team.id);
  std::printf("%s\n", secret.c_str());
  std::fprintf(stderr, "cove: %s %s for team '%s' (%s); it is not shown again\n", what, mask.c_str(),
               team.name.c_str(), team.id.c_str());
  return 0;
}

int key_create(const Config& config, const std::string& team_name) {
  std::string key = generate_api_key();
  return issue_credential(config, team_name, "key", key, mask_api_key(key), [&](Store& store, const std::string& team) {
    store.add_api_key(ApiKey{hash_api_key(key), team, mask_api_key(key), Clock::now()});
  });
}

int token_create(const Config& config, const std::string& team_name) {
  std::string token = generate_access_token();
  return issue_credential(
      config, team_name, "access token", token, mask_access_token(token), [&](Store& store, const std::string& team) {
        store.add_access_token(AccessToken{hash_access_token(token), team, mask_access_token(token), Clock::now()});
      });
}

int sandbox_list(const Config& config) {
  auto [status, body] = admin_request(config.state_dir, "GET", "/sandboxes");
  if (status != 200) {
    std::fprintf(stderr, "cove: the shim answered %u\n", status);
    return 1;
  }
  auto list = nlohmann::json::parse(body);
  std::printf("%-22s %-14s %-9s %-26s %s\n", "SANDBOX", "TEMPLATE", "STATE", "END", "TEAM");
  for (auto& s : list) {
    std::printf("%-22s %-14s %-9s %-26s %s\n", s["sandboxID"].get<std::string>().c_str(),
                s["templateID"].get<std::string>().c_str(), s["state"].get<std::string>().c_str(),
                s["endAt"].get<std::string>().c_str(), s["teamID"].get<std::string>().c_str());
  }
  return 0;
}

int sandbox_kill(const Config& config, const std::string& id) {
  auto [status, body] = admin_request(config.state_dir, "DELETE", "/sandboxes/" + id);
  if (status == 204) {
    std::printf("killed %s\n", id.c_str());
    return 0;
  }
  std::fprintf(stderr, "cove: no live sandbox %s\n", id.c_str());
  return 1;
}

int sandbox_checkpoint(const Config& config, const std::string& id) {
  auto [status, body] = admin_request(config.state_dir, "POST", "/sandboxes/" + id + "/checkpoint");
  if (status == 204) {
    std::printf("checkpointed %s\n", id.c_str());
    return 0;
  }
  std::string message = body;
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) message = j["message"].get<std::string>();
  std::fprintf(stderr, "cove: %s\n", message.c_str());
  return 1;
}

int template_list(const Config& config) {
  auto store = open_sqlite_store(config.state_dir + "/cove.db");
  std::printf("%-16s %-5s %-8s %-8s %-10s %s\n", "TEMPLATE", "CPU", "MEM MB", "DISK MB", "ENVD", "ALIASES");
  for (auto& t : store->templates()) {
    std::string aliases;
    for (auto& a : t.aliases) aliases += (aliases.empty() ? "" : ",") + a;
    std::printf("%-16s %-5d %-8d %-8d %-10s %s\n", t.id.c_str(), t.cpu_count, t.memory_mb, t.disk_size_mb,
                t.envd_version.c_str(), aliases.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a vanished peer is an error code, not a death
  auto args = parse_args(argc, argv);
  if (!args || args->words.empty()) return usage();
  auto& w = args->words;
  try {
    if (w[0] == "version" && w.size() == 1) {
      std::printf("cove %s\n", COVE_VERSION);
      return 0;
    }
    Config config = config_from(*args);
    if (w[0] == "serve" && w.size() == 1) return serve(config);
    if (w[0] == "key" && w.size() == 2 && w[1] == "create") {
      auto team = args->options.find("team");
      if (team == args->options.end() || team->second.empty()) return usage();
      return key_create(config, team->second);
    }
    if (w[0] == "token" && w.size() == 2 && w[1] == "create") {
      auto team = args->options.find("team");
      if (team == args->options.end() || team->second.empty()) return usage();
      return token_create(config, team->second);
    }
    if (w[0] == "sandbox" && w.size() == 2 && w[1] == "list") return sandbox_list(config);
    if (w[0] == "sandbox" && w.size() == 3 && w[1] == "kill") return sandbox_kill(config, w[2]);
    if (w[0] == "sandbox" && w.size() == 3 && w[1] == "checkpoint") return sandbox_checkpoint(config, w[2]);
    if (w[0] == "template" && w.size() == 2 && w[1] == "list") return template_list(config);
    if (w[0] == "template" && w.size() == 3 && w[1] == "build") return template_build(config, w[2]);
    if (w[0] == "network" && w.size() == 2 && w[1] == "down") {
      container::NetworkConfig network_config;
      network_config.bridge = config.bridge;
      network_config.subnet = config.subnet;
      container::HostNetwork(network_config).teardown();
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cove: %s\n", e.what());
    return 1;
  }
  return usage();
}
