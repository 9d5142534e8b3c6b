#pragma once
// envd's REST surface except /files: /health, /init, /envs, /metrics and the orchestrator's
// internal freeze controls.
#include <memory>

#include "http/router.hpp"
#include "system/agent_state.hpp"
#include "system/metrics.hpp"
#include "system/quiesce.hpp"

namespace cove::rest {

struct EndpointDeps {
  system::AgentState& state;
  system::MetricsSampler& metrics;
  std::string envd_version;
  bool clock_sync = false;  // only where the agent owns the clock (a microVM), never in a container
  system::Quiesce& quiesce;  // /freeze lets go, /init and /unfreeze take back
};

void register_endpoints(http::Router& router, std::shared_ptr<EndpointDeps> deps);

// Parses an /init body; false on invalid JSON or a forbidden token value (then 400).
bool parse_init_body(std::string_view body, system::InitRequest& out);

}  // namespace cove::rest
