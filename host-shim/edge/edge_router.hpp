#pragma once
// What the TLS edge serves for each host name: `api.<domain>` is the control plane; every other
// name (`<port>-<id>.<domain>`, `sandbox.<domain>` + headers, and anything malformed, which the
// data plane answers with E2B's 400s) goes to the data plane.
#include <string>

#include "http/server.hpp"

namespace cove::shim::edge {

// `domain` without a port. Both handlers must outlive the router.
http::Handler make_edge_router(const http::Handler& control_plane, const http::Handler& data_plane,
                               std::string domain);

}  // namespace cove::shim::edge
