#pragma once
// Files compiled into the agent (resources/ in the source tree): IPython startup code, the node
// REPL driver. Paths are relative to resources/, e.g. "python/startup/00-e2b-results.py".
#include <string_view>
#include <vector>

namespace cove::interpreter {

struct Resource {
  std::string_view path;
  std::string_view content;
};

const std::vector<Resource>& resources();

}  // namespace cove::interpreter
