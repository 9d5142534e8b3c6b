// Placeholder until the isolation work lands: refuses, so nothing runs unrestricted by accident.
#include "runtime/container/capabilities.hpp"

#include <stdexcept>

namespace cove::shim::container {
void restrict_to_default_capabilities() { throw std::runtime_error("capability restriction not implemented yet"); }
}  // namespace cove::shim::container
