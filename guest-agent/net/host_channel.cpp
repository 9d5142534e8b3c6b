#include "net/host_channel.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <charconv>

namespace cove::netio {
namespace {
constexpr std::string_view kPrefix = "CONNECT ";
constexpr size_t kMaxHandshake = 32;
std::atomic<uint32_t> next_connection_id{1};
}  // namespace

HandshakeParse parse_handshake(std::string_view bytes, uint16_t& port, size_t& consumed) {
  size_t n = std::min(bytes.size(), kPrefix.size());
  if (bytes.substr(0, n) != kPrefix.substr(0, n)) return HandshakeParse::http;
  if (bytes.size() < kPrefix.size()) return HandshakeParse::need_more;
  size_t nl = bytes.find('\n');
  if (nl == std::string_view::npos) {
    return bytes.size() >= kMaxHandshake ? HandshakeParse::invalid : HandshakeParse::need_more;
  }
  std::string_view number = bytes.substr(kPrefix.size(), nl - kPrefix.size());
  if (!number.empty() && number.back() == '\r') number.remove_suffix(1);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() || value == 0 ||
      value > 65535) {
    return HandshakeParse::invalid;
  }
  port = static_cast<uint16_t>(value);
  consumed = nl + 1;
  return HandshakeParse::connect;
}

net::awaitable<void> serve_host_channel(Socket socket, const http::Handler& handler, uint16_t own_port,
                                        Splicer& splicer) {
  std::string initial;
  std::array<char, 64> buf;
  uint16_t port = 0;
  size_t consumed = 0;
  for (;;) {
    boost::system::error_code ec;
    size_t n = co_await socket.async_read_some(net::buffer(buf), net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return;
    initial.append(buf.data(), n);
    auto kind = parse_handshake(initial, port, consumed);
    if (kind == HandshakeParse::need_more) continue;
    if (kind == HandshakeParse::invalid) co_return;  // closes the connection, as Firecracker does
    if (kind == HandshakeParse::http) {
      co_await http::serve_connection(std::move(socket), std::move(initial), handler);
      co_return;
    }
    break;
  }
  std::string rest = initial.substr(consumed);
  std::string ok = "OK " + std::to_string(next_connection_id++) + "\n";

  if (port == own_port) {
    boost::system::error_code ec;
    co_await net::async_write(socket, net::buffer(ok), net::redirect_error(net::use_awaitable, ec));
    if (!ec) co_await http::serve_connection(std::move(socket), std::move(rest), handler);
    co_return;
  }

  // Services bound to either loopback family are reachable.
  net::ip::tcp::socket target(socket.get_executor());
  boost::system::error_code ec;
  for (auto addr : {net::ip::address(net::ip::address_v4::loopback()), net::ip::address(net::ip::address_v6::loopback())}) {
    boost::system::error_code ignored;
    target.close(ignored);
    co_await target.async_connect({addr, port}, net::redirect_error(net::use_awaitable, ec));
    if (!ec) break;
  }
  if (ec) co_return;  // nothing listens: the host sees the connection close without OK
  // The splice passes each piece on as it comes (a request's head and body are often two): with
  // Nagle the second waits for the service's delayed ACK, ~40 ms per exchange.
  boost::system::error_code ignored;
  target.set_option(net::ip::tcp::no_delay(true), ignored);
  co_await net::async_write(socket, net::buffer(ok), net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return;
  if (!rest.empty()) {
    co_await net::async_write(target, net::buffer(rest), net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return;
  }
  // The splicer owns its own descriptors; the asio sockets close theirs on return.
  int a = fcntl(socket.native_handle(), F_DUPFD_CLOEXEC, 0);
  int b = fcntl(target.native_handle(), F_DUPFD_CLOEXEC, 0);
  if (a < 0 || b < 0) {
    if (a >= 0) close(a);
    if (b >= 0) close(b);
    co_return;
  }
  splicer.add(a, b);
}

}  // namespace cove::netio
