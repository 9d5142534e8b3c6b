#pragma once
// A request that asks to switch protocols (WebSocket) relayed as such: the head goes up with its
// Upgrade and `Connection: Upgrade`; a 101 answer turns the client and upstream connections into
// one byte tunnel until either side ends it; any other answer is passed on as a plain response.
#include <boost/asio/awaitable.hpp>

#include "edge/relay.hpp"
#include "http/exchange.hpp"

namespace cove::shim::edge {

// True when the request asks for a protocol switch the tunnel can carry: HTTP/1.1, an Upgrade
// header, `upgrade` among the Connection tokens and no request body.
bool wants_upgrade(const http::Exchange& exchange);

// Same outcomes as relay_exchange; `upstream` is closed on return unless the outcome is
// `completed` for a non-101 answer.
boost::asio::awaitable<RelayOutcome> relay_upgrade(http::Exchange& exchange, http::Socket& upstream);

}  // namespace cove::shim::edge
