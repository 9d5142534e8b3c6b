#pragma once
// The edge's TLS stream over an accepted socket.
#include <boost/asio/ssl/stream.hpp>

#include "http/exchange.hpp"

namespace cove::shim::edge {

namespace net = boost::asio;

using TlsStream = boost::asio::ssl::stream<http::Socket>;

}  // namespace cove::shim::edge
