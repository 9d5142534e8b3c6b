#include "edge/socket_pair.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace cove::shim::edge {

std::pair<http::Socket, http::Socket> make_socket_pair(const boost::asio::any_io_executor& executor) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) {
    throw std::system_error(errno, std::generic_category(), "socketpair");
  }
  const boost::asio::generic::stream_protocol unix_stream(AF_UNIX, 0);
  http::Socket a(executor), b(executor);
  boost::system::error_code ec;
  a.assign(unix_stream, fds[0], ec);
  if (ec) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::system_error(ec.value(), std::generic_category(), "socketpair");
  }
  b.assign(unix_stream, fds[1], ec);
  if (ec) {
    ::close(fds[1]);
    throw std::system_error(ec.value(), std::generic_category(), "socketpair");
  }
  return {std::move(a), std::move(b)};
}

}  // namespace cove::shim::edge
