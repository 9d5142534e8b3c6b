#pragma once
// One accepted connection of the TLS edge: the handshake (bounded in time), then HTTP/2 or
// HTTP/1.1 as ALPN decided. Either way the handler sees plain HTTP/1.1 exchanges, one per request.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>

#include <memory>

#include "edge/tls_stream.hpp"
#include "http/server.hpp"

namespace cove::shim::edge {

net::awaitable<void> serve_tls_connection(http::Socket socket, std::shared_ptr<boost::asio::ssl::context> context,
                                          const http::Handler& handler);

}  // namespace cove::shim::edge
