#pragma once
// Turns the configured templates into store records at start: the agent binary becomes a layer of
// its own above every template (content-addressed, so sandboxes of an older agent keep theirs),
// and each template records the agent's envd protocol version.
#include <string>
#include <vector>

#include "config/config.hpp"
#include "store/store.hpp"

namespace cove::shim {

struct PreparedTemplates {
  std::string agent_layer;   // host dir with usr/local/bin/cove-agent
  std::string envd_version;  // what the agent reports (`-version`)
  std::vector<Template> templates;
};

PreparedTemplates prepare_templates(const Config& config, Store& store);

}  // namespace cove::shim
