#include "http/server.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <limits>

namespace cove::http {
namespace {
// envd's idle timeout; longer than E2B's proxy idle timeout of 620 s.
constexpr auto kIdleTimeout = std::chrono::seconds(640);
constexpr size_t kHeaderLimit = 64 * 1024;
}  // namespace

net::awaitable<void> serve_connection(Socket socket, std::string initial, const Handler& handler) {
  beast::flat_buffer buffer;
  if (!initial.empty()) {
    auto dst = buffer.prepare(initial.size());
    net::buffer_copy(dst, net::buffer(initial));
    buffer.commit(initial.size());
  }
  // Closes idle keep-alive connections; re-armed before each header read.
  net::steady_timer idle(socket.get_executor());
  bool idle_expired = false;

  for (;;) {
    bhttp::request_parser<bhttp::buffer_body> parser;
    parser.header_limit(kHeaderLimit);
    // Handlers enforce their own limits. (Not boost::none: Beast 1.74 compares a none limit as
    // smaller than any length.)
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());

    idle.expires_after(kIdleTimeout);
    idle.async_wait([&socket, &idle_expired](boost::system::error_code ec) {
      if (ec) return;
      idle_expired = true;
      boost::system::error_code ignored;
      socket.cancel(ignored);
    });
    boost::system::error_code ec;
    co_await bhttp::async_read_header(socket, buffer, parser,
                                      net::redirect_error(net::use_awaitable, ec));
    idle.cancel();
    if (ec) {
      if (ec != bhttp::error::end_of_stream && ec != net::error::eof && !idle_expired &&
          ec != net::error::connection_reset && ec != net::error::operation_aborted) {
        // Malformed request: answer 400 and close, as Go's server does.
        static constexpr std::string_view kBad =
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Connection: close\r\nContent-Length: 15\r\n\r\n400 Bad Request";
        boost::system::error_code ignored;
        co_await net::async_write(socket, net::buffer(kBad.data(), kBad.size()),
                                  net::redirect_error(net::use_awaitable, ignored));
      }
      break;
    }

    Exchange exchange(socket, buffer, parser);
    bool failed = false;
    try {
      co_await handler(exchange);
    } catch (const std::exception&) {
      // A broken connection mid-body, or a handler bug: never take the agent down for it.
      failed = true;
    }
    if (!exchange.responded()) {
      if (failed) exchange.close_after();
      co_await exchange.respond(500, "text/plain; charset=utf-8", "internal error\n");
    }
    if (failed) break;
    if (exchange.should_close() || !parser.keep_alive() || !parser.is_done()) break;
  }
  boost::system::error_code ignored;
  socket.shutdown(net::socket_base::shutdown_both, ignored);
  socket.close(ignored);
}

}  // namespace cove::http
