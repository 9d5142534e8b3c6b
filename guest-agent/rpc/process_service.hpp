#pragma once
// process.Process over Connect: translates messages to and from the process registry.
#include "process/registry.hpp"
#include "rpc/connect.hpp"
#include "system/agent_state.hpp"
#include "system/users.hpp"

namespace cove::rpc {

// Resolves the calling user: the Basic-auth user if sent, else the default user.
using UserResolver = std::function<std::optional<system::User>(const http::Exchange&, Status&)>;

struct ProcessServiceDeps {
  process::Registry& registry;
  const system::AgentState& state;
  UserResolver resolve_user;
  std::string agent_path;  // PATH given to children (the agent's own)
};

void register_process_service(ConnectRouter& router, ProcessServiceDeps deps);

}  // namespace cove::rpc
