#pragma once
// The host channel's handshake, Firecracker hybrid-vsock style: a host connection may open with
// `CONNECT <port>\n`; the agent answers `OK <n>\n` and then serves its own HTTP (port == the
// agent's) or splices the connection to 127.0.0.1:<port> / [::1]:<port> inside the sandbox.
// A connection that opens with anything else is served as HTTP directly.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "http/server.hpp"
#include "net/listeners.hpp"
#include "net/splice.hpp"

namespace cove::netio {

enum class HandshakeParse { http, connect, need_more, invalid };

// Classifies the first bytes of a host-channel connection. For `connect`, `port` is set and
// `consumed` is the length of the handshake line.
HandshakeParse parse_handshake(std::string_view bytes, uint16_t& port, size_t& consumed);

net::awaitable<void> serve_host_channel(Socket socket, const http::Handler& handler, uint16_t own_port,
                                        Splicer& splicer);

}  // namespace cove::netio
