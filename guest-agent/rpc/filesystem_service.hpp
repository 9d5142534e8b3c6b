#pragma once
// filesystem.Filesystem over Connect: translates messages to and from filesystem/.
#include "rpc/connect.hpp"
#include "rpc/process_service.hpp"
#include "system/agent_state.hpp"
#include "system/users.hpp"

namespace cove::rpc {

struct FilesystemServiceDeps {
  const system::AgentState& state;
  const system::UserDatabase& users;  // owner/group names
  UserResolver resolve_user;
};

void register_filesystem_service(ConnectRouter& router, FilesystemServiceDeps deps);

}  // namespace cove::rpc
