#pragma once
// envd's file transfer endpoints: GET/POST /files and POST /files/compose.
#include <memory>

#include "http/router.hpp"
#include "system/agent_state.hpp"
#include "system/users.hpp"

namespace cove::rest {

struct FileEndpointDeps {
  const system::AgentState& state;  // access token (signatures), default user and workdir
  const system::UserDatabase& users;
};

void register_file_endpoints(http::Router& router, std::shared_ptr<FileEndpointDeps> deps);

}  // namespace cove::rest
