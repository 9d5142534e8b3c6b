#pragma once
// HTTP/1.1 over TLS: the decrypted bytes go through an in-process socket pair to the ordinary
// HTTP/1.1 connection loop, so keep-alive, chunked bodies, streaming and Upgrade tunnels behave
// exactly as on the plain listeners. Either side closing ends the connection.
#include <boost/asio/awaitable.hpp>

#include "edge/tls_stream.hpp"
#include "http/server.hpp"

namespace cove::shim::edge {

net::awaitable<void> serve_http1_over_tls(TlsStream& stream, const http::Handler& handler);

}  // namespace cove::shim::edge
