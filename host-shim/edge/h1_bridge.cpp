#include "edge/h1_bridge.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <memory>
#include <vector>

#include "async/event.hpp"
#include "edge/socket_pair.hpp"
#include "edge/stream_buffer.hpp"

namespace cove::shim::edge {
namespace {
constexpr size_t kFromClientPiece = 16 * 1024;   // one TLS record
constexpr size_t kToClientPiece = 256 * 1024;    // OpenSSL cuts it into records

struct Inbound {
  explicit Inbound(const net::any_io_executor& ex) : finished(ex) {}
  async::Event finished;
  bool done = false;
};

// Client → handler. At the client's end the handler learns there is no more (EOF), which it
// takes as the client leaving; the response direction ends when the handler closes.
net::awaitable<void> client_to_handler(TlsStream& stream, http::Socket& plain, std::shared_ptr<Inbound> inbound) {
  StreamBuffer buf(kFromClientPiece);
  boost::system::error_code ec;
  for (;;) {
    size_t n = co_await stream.async_read_some(net::buffer(buf.data(), buf.size()), net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
    co_await net::async_write(plain, net::buffer(buf.data(), n), net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
  }
  boost::system::error_code ignored;
  plain.shutdown(net::socket_base::shutdown_send, ignored);
  inbound->done = true;
  inbound->finished.notify_all();
}
}  // namespace

net::awaitable<void> serve_http1_over_tls(TlsStream& stream, const http::Handler& handler) {
  auto executor = stream.get_executor();
  auto [plain, handler_end] = make_socket_pair(executor);
  net::co_spawn(executor, http::serve_connection(std::move(handler_end), std::string(), handler), net::detached);

  auto inbound = std::make_shared<Inbound>(executor);
  net::co_spawn(executor, client_to_handler(stream, plain, inbound), net::detached);

  StreamBuffer buf(kToClientPiece);
  boost::system::error_code ec;
  for (;;) {
    size_t n = co_await plain.async_read_some(net::buffer(buf.data(), buf.size()), net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
    co_await net::async_write(stream, net::buffer(buf.data(), n), net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
  }
  // The handler closed the connection (or the client stopped taking bytes): stop reading the
  // client and let the caller close the socket.
  boost::system::error_code ignored;
  stream.next_layer().cancel(ignored);
  plain.close(ignored);
  while (!inbound->done) co_await inbound->finished.wait();
}

}  // namespace cove::shim::edge
