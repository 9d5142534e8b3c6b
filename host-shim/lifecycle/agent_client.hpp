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
  // The token the agent holds now, when it is to change (a sandbox restored from another's
  // snapshot): presented as X-Access-Token, which authorises the agent to take the new one.
  std::string previous_token;
  bool with_timestamp = false;  // after a resume: the agent re-arms what it suspended
};

std::string init_body(const AgentInit& init);

// One request to the agent on a fresh stream; returns the HTTP status. Throws what connect throws.
net::awaitable<unsigned> agent_request(Runtime& runtime, const std::string& id, uint16_t port,
                                       const std::string& method, const std::string& target,
                                       const std::string& body, const std::string& token);

// POST /freeze: the agent drops every host-channel connection and suspends its watchers (what a
// checkpoint cannot carry). Returns once the agent has closed this very connection too (EOF), so
// nothing of the agent's is left connected to the host; throws RuntimeError if it refused or
// did not close within `limit`.
net::awaitable<void> quiesce_agent(Runtime& runtime, const std::string& id, uint16_t port,
                                   const std::string& token, std::chrono::milliseconds limit);

// Waits until the agent accepts connections, sends /init, then requires /health → 204.
// Throws RuntimeError (without secrets in the message) when it does not answer within `limit`.
net::awaitable<void> initialise_agent(Runtime& runtime, const std::string& id, uint16_t agent_port,
                                      const AgentInit& init, std::chrono::milliseconds limit);

}  // namespace cove::shim
