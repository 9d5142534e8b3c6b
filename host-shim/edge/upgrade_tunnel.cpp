#include "edge/upgrade_tunnel.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <memory>

#include "async/event.hpp"
#include "edge/forwarded_headers.hpp"

namespace cove::shim::edge {
namespace {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using http::Socket;

constexpr size_t kHeaderLimit = 64 * 1024;
constexpr size_t kRefusalBodyLimit = 1 << 20;  // a non-101 answer to an upgrade is small
constexpr size_t kTunnelPiece = 16 * 1024;

bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view t = list.substr(0, comma);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (beast::iequals(beast::string_view(t.data(), t.size()), beast::string_view(token.data(), token.size()))) {
      return true;
    }
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}

std::string upgrade_head(const http::Exchange& exchange) {
  std::string head = upstream_request_head(exchange.method(), exchange.target(), exchange.headers(), BodyFraming::none);
  // upstream_request_head ends with "Connection: close\r\n\r\n": a tunnel wants the opposite.
  constexpr std::string_view kClose = "Connection: close\r\n\r\n";
  head.resize(head.size() - kClose.size());
  head.append("Connection: Upgrade\r\nUpgrade: ").append(exchange.header("Upgrade")).append("\r\n\r\n");
  return head;
}

void close_socket(Socket& s) {
  boost::system::error_code ignored;
  s.close(ignored);
}

// One direction of the tunnel; at its end the other side learns there is no more to come.
net::awaitable<void> pump(Socket& from, Socket& to, std::string pending) {
  boost::system::error_code ec;
  if (!pending.empty()) {
    co_await net::async_write(to, net::buffer(pending), net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return;
  }
  std::array<char, kTunnelPiece> buf;
  for (;;) {
    size_t n = co_await from.async_read_some(net::buffer(buf), net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
    co_await net::async_write(to, net::buffer(buf.data(), n), net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
  }
  boost::system::error_code ignored;
  to.shutdown(net::socket_base::shutdown_send, ignored);
}

struct Joined {
  explicit Joined(const net::any_io_executor& ex) : finished(ex) {}
  async::Event finished;
  bool done = false;
};

net::awaitable<void> pump_then_signal(Socket& from, Socket& to, std::string pending, std::shared_ptr<Joined> joined) {
  co_await pump(from, to, std::move(pending));
  joined->done = true;
  joined->finished.notify_all();
}
}  // namespace

bool wants_upgrade(const http::Exchange& exchange) {
  return exchange.version() >= 11 && exchange.has_header("Upgrade") && !exchange.header("Upgrade").empty() &&
         has_token(exchange.header("Connection"), "upgrade") && exchange.body_done();
}

net::awaitable<RelayOutcome> relay_upgrade(http::Exchange& exchange, Socket& upstream) {
  const std::string head = upgrade_head(exchange);
  boost::system::error_code ec;
  co_await net::async_write(upstream, net::buffer(head), net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    close_socket(upstream);
    co_return RelayOutcome::upstream_failed_before_head;
  }
  beast::flat_buffer upstream_buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kRefusalBodyLimit);
  co_await bhttp::async_read_header(upstream, upstream_buffer, parser, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    close_socket(upstream);
    co_return RelayOutcome::upstream_failed_before_head;
  }
  const unsigned status = parser.get().result_int();
  if (status != 101) {
    // Refused (or not understood): an ordinary answer, read whole (it is small) and passed on.
    if (!parser.is_done()) {
      co_await bhttp::async_read(upstream, upstream_buffer, parser, net::redirect_error(net::use_awaitable, ec));
    }
    close_socket(upstream);
    if (ec) co_return RelayOutcome::upstream_failed_before_head;
    http::Fields fields = end_to_end_headers(parser.get().base());
    std::string body = std::move(parser.get().body());
    fields.set(bhttp::field::content_length, std::to_string(body.size()));
    if (!co_await exchange.begin_relayed(status, fields)) co_return RelayOutcome::client_gone;
    if (!body.empty() && !co_await exchange.write_body(body)) co_return RelayOutcome::client_gone;
    co_return RelayOutcome::completed;
  }

  // The server agreed: its 101 goes to the client as it came (Upgrade, Connection and the
  // Sec-WebSocket-* answers included), then bytes flow both ways untouched.
  const http::Fields switched(parser.get().base());
  if (!co_await exchange.begin_switched(switched)) {
    close_socket(upstream);
    co_return RelayOutcome::client_gone;
  }
  std::string from_client = exchange.take_buffered();
  std::string from_upstream(static_cast<const char*>(upstream_buffer.data().data()), upstream_buffer.size());
  Socket& client = exchange.socket();
  auto executor = client.get_executor();
  auto joined = std::make_shared<Joined>(executor);
  net::co_spawn(executor, pump_then_signal(client, upstream, std::move(from_client), joined), net::detached);
  co_await pump(upstream, client, std::move(from_upstream));
  // The upstream ended (or the client stopped taking bytes): the client's direction is over too
  // once it has nothing more to say; do not wait on a client that keeps the socket open.
  if (!joined->done) {
    boost::system::error_code ignored;
    client.cancel(ignored);
    upstream.cancel(ignored);
  }
  while (!joined->done) co_await joined->finished.wait();
  close_socket(upstream);
  exchange.close_after();
  co_return RelayOutcome::completed;
}

}  // namespace cove::shim::edge
