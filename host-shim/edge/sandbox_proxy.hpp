#pragma once
// The data plane: every envd (49983), code-interpreter (49999) and user-port request of every
// sandbox arrives here and is relayed to the sandbox port named by E2b-Sandbox-Id /
// E2b-Sandbox-Port (or the Host <port>-<id>.<domain>), with E2B's proxy answers for what cannot
// be relayed (400 routing, 404 control-plane routes, 403 traffic token, 502 gone or closed).
#include "http/server.hpp"
#include "lifecycle/lifecycle.hpp"

#include <string>

#include "edge/relay.hpp"

namespace cove::shim::edge {

struct ProxyOptions {
  // The sandbox domain; empty: route on the headers only (the plain-HTTP sandbox listener).
  std::string domain;
  RelayOptions relay;
};

// The handler for http::serve_connection. `lifecycle` must outlive it.
http::Handler make_sandbox_proxy(Lifecycle& lifecycle, ProxyOptions options);

}  // namespace cove::shim::edge
