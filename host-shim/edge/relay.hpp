#pragma once
// One request relayed to a sandbox port over its own upstream connection: the head goes up, the
// request body streams up while the response streams down piece by piece (each piece reaches the
// client as soon as it arrives: Connect server streams need every frame flushed), in bounded
// memory whatever the size. No HTTP semantics beyond framing: status and end-to-end headers pass
// through.
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <string>

#include "http/exchange.hpp"

namespace cove::shim::edge {

enum class RelayOutcome {
  completed,
  // Nothing was answered: the upstream failed before a response head arrived (the caller answers).
  upstream_failed_before_head,
  // The upstream broke off mid-response; the client connection is to be dropped without a clean
  // end, so the client sees a cut stream (the SDK then probes /health).
  upstream_failed,
  client_gone,
};

struct RelayOptions {
  size_t piece = 256 * 1024;  // bytes per read, each direction (untouched until used)
};

// Runs on the exchange's executor (one thread). On any outcome but `completed` and
// `upstream_failed_before_head` the exchange is marked to close; `upstream` is closed on every
// outcome but `completed`.
// `cors_origin`, when not empty, is granted on a response that does not grant CORS itself (the
// edge answered the browser's preflight for this service, so the real answer must agree).
boost::asio::awaitable<RelayOutcome> relay_exchange(http::Exchange& exchange, http::Socket& upstream,
                                                    RelayOptions options = {}, std::string cors_origin = {});

}  // namespace cove::shim::edge
