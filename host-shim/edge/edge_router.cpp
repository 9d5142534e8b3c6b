#include "edge/edge_router.hpp"

#include "edge/host_route.hpp"

namespace cove::shim::edge {

http::Handler make_edge_router(const http::Handler& control_plane, const http::Handler& data_plane,
                               std::string domain) {
  return [&control_plane, &data_plane, domain = std::move(domain)](http::Exchange& exchange) {
    if (classify_host(exchange.header("Host"), domain) == HostKind::api) return control_plane(exchange);
    return data_plane(exchange);
  };
}

}  // namespace cove::shim::edge
