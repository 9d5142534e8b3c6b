#include "runtime/container/host_channel.hpp"

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <sys/un.h>
#include <unistd.h>

#include <charconv>

namespace cove::shim::container {
namespace {

constexpr size_t kMaxReply = 32;

[[noreturn]] void fail(boost::system::errc::errc_t code) {
  throw boost::system::system_error(boost::system::errc::make_error_code(code));
}

}  // namespace

std::optional<uint64_t> parse_handshake_reply(std::string_view line) {
  if (line.size() < 5 || line.substr(0, 3) != "OK " || line.back() != '\n') return std::nullopt;
  line.remove_prefix(3);
  line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), n);
  if (line.empty() || ec != std::errc() || p != line.data() + line.size()) return std::nullopt;
  return n;
}

net::awaitable<Socket> connect_host_channel(std::string socket_path, uint16_t port) {
  auto ex = co_await net::this_coro::executor;
  // sun_path holds 107 characters; a longer path is reached through its directory's descriptor.
  int dir_fd = -1;
  if (socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    size_t slash = socket_path.rfind('/');
    dir_fd = open(socket_path.substr(0, slash).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) fail(boost::system::errc::connection_refused);
    socket_path = "/proc/self/fd/" + std::to_string(dir_fd) + socket_path.substr(slash);
  }
  net::local::stream_protocol::endpoint local(socket_path);
  net::generic::stream_protocol::endpoint endpoint(local);
  Socket socket(ex, net::generic::stream_protocol(AF_UNIX, SOCK_STREAM));
  boost::system::error_code ec;
  co_await socket.async_connect(endpoint, net::redirect_error(net::use_awaitable, ec));
  if (dir_fd >= 0) close(dir_fd);
  if (ec == boost::system::errc::no_such_file_or_directory || ec == boost::system::errc::connection_refused) {
    fail(boost::system::errc::connection_refused);
  }
  if (ec) throw boost::system::system_error(ec);

  std::string request = "CONNECT " + std::to_string(port) + "\n";
  co_await net::async_write(socket, net::buffer(request), net::redirect_error(net::use_awaitable, ec));
  if (ec) fail(boost::system::errc::connection_refused);
  // One byte at a time: whatever follows the reply belongs to the caller's stream.
  std::string reply;
  char c = 0;
  while (reply.size() < kMaxReply) {
    co_await net::async_read(socket, net::buffer(&c, 1), net::redirect_error(net::use_awaitable, ec));
    if (ec) fail(boost::system::errc::connection_refused);
    reply.push_back(c);
    if (c == '\n') break;
  }
  if (!parse_handshake_reply(reply)) fail(boost::system::errc::protocol_error);
  co_return socket;
}

}  // namespace cove::shim::container
