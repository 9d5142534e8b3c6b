#pragma once
// The HTTP/1.1 connection loop: parse a request header, hand the exchange to the handler, repeat
// while keep-alive holds. The same loop serves TCP, the Unix host channel and vsock.
#include <functional>
#include <string>

#include "http/exchange.hpp"

namespace cove::http {

using Handler = std::function<net::awaitable<void>(Exchange&)>;

// `initial` holds bytes already read from the socket (e.g. after a host-channel handshake).
net::awaitable<void> serve_connection(Socket socket, std::string initial, const Handler& handler);

}  // namespace cove::http
