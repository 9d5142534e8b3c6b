#include "edge/tls_connection.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

#include "edge/h1_bridge.hpp"
#include "edge/h2_gateway.hpp"
#include "edge/tls_context.hpp"
#include "edge/tls_stream.hpp"

namespace cove::shim::edge {
namespace {
// A client that connects and says nothing must not hold a descriptor for long.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
}  // namespace

net::awaitable<void> serve_tls_connection(http::Socket socket, std::shared_ptr<boost::asio::ssl::context> context,
                                          const http::Handler& handler) {
  TlsStream stream(std::move(socket), *context);
  boost::system::error_code ec;
  {
    net::steady_timer deadline(stream.get_executor(), kHandshakeTimeout);
    deadline.async_wait([&stream](boost::system::error_code wait_ec) {
      if (wait_ec) return;
      boost::system::error_code ignored;
      stream.next_layer().cancel(ignored);
    });
    co_await stream.async_handshake(boost::asio::ssl::stream_base::server,
                                    net::redirect_error(net::use_awaitable, ec));
    deadline.cancel();
    // Let the cancelled wait run before the timer goes away.
    co_await net::post(stream.get_executor(), net::use_awaitable);
  }
  if (!ec) {
    if (negotiated_protocol(stream.native_handle()) == "h2") {
      co_await serve_http2(stream, handler);
    } else {
      co_await serve_http1_over_tls(stream, handler);
    }
  }
  boost::system::error_code ignored;
  stream.next_layer().shutdown(net::socket_base::shutdown_both, ignored);
  stream.next_layer().close(ignored);
}

}  // namespace cove::shim::edge
