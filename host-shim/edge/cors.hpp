#pragma once
// CORS for browsers calling services in sandboxes. A browser asks permission with a preflight
// (OPTIONS + Origin + Access-Control-Request-Method) before any cross-origin call with custom
// headers; most development servers (python -m http.server, for one) do not answer it, so the edge
// does when the service does not. envd answers its own (port 49983 is never handled here).
#include <boost/asio/awaitable.hpp>

#include <string>

#include "edge/relay.hpp"
#include "http/exchange.hpp"

namespace cove::shim::edge {

bool is_cors_preflight(const http::Exchange& exchange);

// The edge's permission: the request's origin, any method, the headers it asked for.
http::Fields preflight_answer_fields(const http::Exchange& exchange);

// The preflight goes to the service first; its answer is relayed when it grants CORS itself
// (carries Access-Control-Allow-Origin), otherwise the edge answers 204 with its own grant.
// `upstream` is closed on return.
boost::asio::awaitable<RelayOutcome> relay_preflight(http::Exchange& exchange, http::Socket& upstream);

}  // namespace cove::shim::edge
