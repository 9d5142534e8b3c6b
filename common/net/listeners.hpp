#pragma once
// Listening sockets for the three transports, all as generic stream sockets so one HTTP
// connection type serves them: TCP (port 49983 inside the sandbox), a Unix socket (the host
// channel of a container), AF_VSOCK (the host channel of a microVM).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/generic/stream_protocol.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace cove::netio {

namespace net = boost::asio;
using Socket = net::generic::stream_protocol::socket;
using Acceptor = net::basic_socket_acceptor<net::generic::stream_protocol>;

// Dual-stack [::]:port (IPv4 through mapped addresses), or 0.0.0.0 where IPv6 is unavailable.
Acceptor listen_tcp(net::any_io_executor ex, uint16_t port);
// Replaces a stale socket file; the socket is made accessible to its owner only.
Acceptor listen_unix(net::any_io_executor ex, const std::string& path);
Acceptor listen_vsock(net::any_io_executor ex, uint32_t port);

uint16_t local_tcp_port(const Acceptor& acceptor);

// Accepts forever; transient errors (EMFILE, ENOBUFS) back off instead of spinning.
net::awaitable<void> accept_loop(Acceptor& acceptor, std::function<void(Socket)> on_connection);

}  // namespace cove::netio
