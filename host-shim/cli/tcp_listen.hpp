#pragma once
// Listening on the configured "host:port" addresses ("127.0.0.1:3000", "[::1]:3000", port 0 =
// any free port), and the admin Unix socket.
#include <string>

#include "net/listeners.hpp"

namespace cove::shim {

netio::Acceptor listen_address(netio::net::any_io_executor ex, const std::string& host_port);
std::string describe_local(const netio::Acceptor& acceptor);  // "127.0.0.1:3000" / "[::1]:3000"

}  // namespace cove::shim
