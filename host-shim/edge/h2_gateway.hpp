#pragma once
// HTTP/2 over TLS (nghttp2): every stream becomes one HTTP/1.1 exchange with `Connection: close`
// on its own in-process socket pair, served by the ordinary handler. Bodies stream both ways under
// HTTP/2 flow control (the request window is only reopened as bytes reach the handler), a reset
// stream closes its pair (the handler sees the client gone) and a response cut short resets the
// stream (the client sees the break, as on HTTP/1.1).
#include <boost/asio/awaitable.hpp>

#include "edge/tls_stream.hpp"
#include "http/server.hpp"

namespace cove::shim::edge {

struct Http2Limits {
  uint32_t max_concurrent_streams = 1000;
  int32_t stream_window = 1 << 20;       // request bytes in flight per stream
  int32_t connection_window = 16 << 20;  // and per connection
  size_t response_buffer = 512 * 1024;   // response bytes held per stream before reading pauses
  size_t header_list_limit = 64 * 1024;  // request header bytes per stream
};

net::awaitable<void> serve_http2(TlsStream& stream, const http::Handler& handler, Http2Limits limits = {});

}  // namespace cove::shim::edge
