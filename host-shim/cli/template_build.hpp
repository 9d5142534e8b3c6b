#pragma once
// `cove template build DIR`: builds the built-in template defined by DIR/template.json in the
// running shim (through the admin socket), printing its build log; exit 0 once it is ready.
#include <string>

#include "config/config.hpp"

namespace cove::shim {

int template_build(const Config& config, const std::string& dir);

}  // namespace cove::shim
