#include "net/listeners.hpp"

#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace cove::netio {
namespace {
Acceptor open_and_listen(net::any_io_executor ex, const net::generic::stream_protocol::endpoint& ep,
                         bool reuse, std::function<void(int)> before_bind = {}) {
  Acceptor acceptor(ex);
  acceptor.open(ep.protocol());
  if (reuse) acceptor.set_option(net::socket_base::reuse_address(true));
  if (before_bind) before_bind(acceptor.native_handle());
  acceptor.bind(ep);
  acceptor.listen(net::socket_base::max_listen_connections);
  return acceptor;
}
}  // namespace

Acceptor listen_tcp(net::any_io_executor ex, uint16_t port) {
  try {
    net::ip::tcp::endpoint v6(net::ip::address_v6::any(), port);
    return open_and_listen(ex, net::generic::stream_protocol::endpoint(v6), true, [](int fd) {
      int off = 0;
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    });
  } catch (const boost::system::system_error& e) {
    if (e.code() != net::error::address_family_not_supported) throw;
  }
  net::ip::tcp::endpoint v4(net::ip::address_v4::any(), port);
  return open_and_listen(ex, net::generic::stream_protocol::endpoint(v4), true);
}

Acceptor listen_unix(net::any_io_executor ex, const std::string& path) {
  ::unlink(path.c_str());
  net::local::stream_protocol::endpoint local(path);
  mode_t old = ::umask(0077);
  try {
    auto acceptor = open_and_listen(ex, net::generic::stream_protocol::endpoint(local), false);
    ::umask(old);
    return acceptor;
  } catch (...) {
    ::umask(old);
    throw;
  }
}

Acceptor listen_vsock(net::any_io_executor ex, uint32_t port) {
  sockaddr_vm addr{};
  addr.svm_family = AF_VSOCK;
  addr.svm_cid = VMADDR_CID_ANY;
  addr.svm_port = port;
  net::generic::stream_protocol::endpoint ep(&addr, sizeof addr, 0);
  return open_and_listen(ex, ep, false);
}

uint16_t local_tcp_port(const Acceptor& acceptor) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(const_cast<Acceptor&>(acceptor).native_handle(), reinterpret_cast<sockaddr*>(&ss), &len);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return 0;
}

net::awaitable<void> accept_loop(Acceptor& acceptor, std::function<void(Socket)> on_connection) {
  const int family = acceptor.local_endpoint().protocol().family();
  for (;;) {
    boost::system::error_code ec;
    Socket socket = co_await acceptor.async_accept(net::redirect_error(net::use_awaitable, ec));
    if (ec == net::error::operation_aborted) co_return;
    if (ec) {
      // Out of descriptors or buffers: wait for some to be released rather than spin.
      net::steady_timer backoff(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await backoff.async_wait(net::redirect_error(net::use_awaitable, ec));
      continue;
    }
    if (family == AF_INET || family == AF_INET6) {
      // Small streamed frames must not wait for Nagle's ~40 ms.
      int one = 1;
      setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    on_connection(std::move(socket));
  }
}

}  // namespace cove::netio
