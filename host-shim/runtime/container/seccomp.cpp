// Placeholder until the isolation work lands: refuses, so nothing runs unfiltered by accident.
#include "runtime/container/seccomp.hpp"

#include <stdexcept>

namespace cove::shim::container {
void load_sandbox_seccomp_filter() { throw std::runtime_error("seccomp filter not implemented yet"); }
}  // namespace cove::shim::container
