#pragma once
// `cove-agent -code-interpreter`: the :49999 server as its own process of the agent binary,
// started by a template's start command (as E2B starts its server from the template), so the
// kernels it manages never share a process with the envd side.
#include <cstdint>
#include <string>

namespace cove::interpreter {

struct ServerOptions {
  uint16_t port = 49999;
  uint16_t envd_port = 49983;
  std::string runtime_dir = "/run/cove/interpreter";
  std::string child_path;  // PATH of the kernels
};

int run_code_interpreter(const ServerOptions& options);

}  // namespace cove::interpreter
