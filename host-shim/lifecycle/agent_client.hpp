#pragma once
// The shim's side of talking to an agent over a runtime stream: the orchestrator calls envd gets
// (POST /init, GET /health). One request per connection; no HTTP library beyond Beast's parser.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <map>
#include <string>

#include "runtime/runtime.hpp"

namespace cove::shim {

struct AgentInit {
  std::map<std::string, std::string> env_vars;
  std::string access_token;  // empty: unsecured
  std::string default_user = "user";
  std::string default_workdir = "/home/user";
};

std::string init_body(const AgentInit& init);

// Waits until the agent accepts connections, sends /init, then requires /health → 204.
// Throws RuntimeError (without secrets in the message) when it does not answer within `limit`.
net::awaitable<void> initialise_agent(Runtime& runtime, const std::string& id, uint16_t agent_port,
                                      const AgentInit& init, std::chrono::milliseconds limit);

}  // namespace cove::shim
