#pragma once
// `cove serve`: compose store, runtime, lifecycle and listeners, reconcile, then serve until
// SIGINT/SIGTERM. Sandboxes keep running when it stops.
#include "config/config.hpp"

namespace cove::shim {

int serve(const Config& config);

}  // namespace cove::shim
