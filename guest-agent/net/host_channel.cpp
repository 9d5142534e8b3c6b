#include "net/host_channel.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <charconv>
#include <iostream>

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

HostChannel::HostChannel(net::any_io_executor executor, http::Handler handler, uint16_t own_port, Splicer& splicer,
                         std::chrono::milliseconds close_grace)
    : handler_(std::move(handler)),
      own_port_(own_port),
      splicer_(splicer),
      close_grace_(close_grace),
      tracking_(std::make_shared<Tracking>(std::move(executor))) {}

net::awaitable<void> HostChannel::serve(Socket socket) {
  // Tracked from accept until the descriptor is closed (serve_tracked's socket, or the one it
  // moved into the HTTP loop, is closed before it returns; nothing runs in between).
  const int fd = socket.native_handle();
  const unsigned long id = ++tracking_->next_id;
  tracking_->open[fd] = Connection{id, false};
  struct Untrack {
    std::shared_ptr<Tracking> tracking;
    int fd;
    unsigned long id;
    ~Untrack() {
      auto it = tracking->open.find(fd);
      if (it != tracking->open.end() && it->second.id == id) tracking->open.erase(it);
      tracking->closed.notify_all();
    }
  } untrack{tracking_, fd, id};
  co_await serve_tracked(std::move(socket));
}

net::awaitable<std::string> HostChannel::let_go(int request_fd) {
  auto& open = tracking_->open;
  if (auto it = open.find(request_fd); it != open.end()) it->second.carries_freeze = true;
  // Shutting down wakes whatever waits on a connection (the next request's read, a stream's
  // disconnect watch, a write), so each ends and closes its descriptor.
  for (const auto& [fd, connection] : open) {
    if (!connection.carries_freeze) ::shutdown(fd, SHUT_RDWR);
  }
  restart_splicer_ = restart_splicer_ || splicer_.running();
  splicer_.stop();
  const auto deadline = async::Clock::now() + close_grace_;
  for (;;) {
    size_t left = 0;
    for (const auto& [fd, connection] : open) left += connection.carries_freeze ? 0 : 1;
    if (left == 0) co_return std::string();
    if (async::Clock::now() >= deadline) {
      co_return std::to_string(left) + " host-channel connection(s) still open " +
          std::to_string(close_grace_.count()) + " ms after being shut down";
    }
    co_await tracking_->closed.wait_until(deadline);
  }
}

void HostChannel::take_back() {
  if (!restart_splicer_) return;  // it starts on the next port-forward anyway
  restart_splicer_ = false;
  std::string error;
  if (!splicer_.start(&error)) std::cerr << "cove-agent: port forwarding unavailable: " << error << "\n";
}

net::awaitable<void> HostChannel::serve_tracked(Socket socket) {
  const http::Handler& handler = handler_;
  const uint16_t own_port = own_port_;
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
  splicer_.add(a, b);  // closes both itself when it cannot run
}

}  // namespace cove::netio
