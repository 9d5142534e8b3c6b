#pragma once
// The shim's side of the host channel: the agent listens on a Unix socket in the sandbox's
// channel dir; a connection opens with `CONNECT <port>\n` and the agent answers `OK <n>\n` once
// it serves that port (its own HTTP, or a splice to the port on the sandbox's loopback). A close
// without OK means nothing listens there.
#include <optional>
#include <string>
#include <string_view>

#include "runtime/runtime.hpp"

namespace cove::shim::container {

// n out of "OK <n>\n"; nullopt for anything else (incomplete lines included).
std::optional<uint64_t> parse_handshake_reply(std::string_view line);

// Connects to the agent's socket at `socket_path` and completes the handshake for `port`. Throws
// boost::system::system_error: errc::connection_refused when the socket is missing, refuses, or
// closes without OK; errc::protocol_error for a malformed reply.
net::awaitable<Socket> connect_host_channel(std::string socket_path, uint16_t port);

}  // namespace cove::shim::container
