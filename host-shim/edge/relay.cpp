#include "edge/relay.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <limits>
#include <optional>
#include <vector>

#include "async/event.hpp"
#include "edge/forwarded_headers.hpp"
#include "edge/stream_buffer.hpp"

namespace cove::shim::edge {
namespace {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using http::Exchange;
using http::Socket;

constexpr size_t kHeaderLimit = 64 * 1024;

// The request-body half of a relay, which also watches the client once the body is through.
// It and the response half run as two coroutines on one thread and share this state.
struct UploadState {
  explicit UploadState(const net::any_io_executor& ex) : wake(ex), finished(ex) {}
  async::Event wake;      // the peer watch fires it; the response half fires it to stop us
  async::Event finished;  // fired when the upload coroutine returns
  bool done = false;
  bool body_through = false;  // the whole request body went upstream
  bool client_failed = false; // the client broke off or went away
  bool stop = false;          // the response half is finished with us
};

void close_socket(Socket& s) {
  boost::system::error_code ignored;
  s.close(ignored);
}

net::awaitable<void> upload(Exchange& exchange, Socket& upstream, BodyFraming framing, size_t piece,
                            UploadState& state) {
  bool through = framing == BodyFraming::none;
  if (!through) {
    StreamBuffer buf(piece);
    for (;;) {
      size_t n = 0;
      bool client_ok = true;
      try {
        n = co_await exchange.read_body_some(buf.data(), buf.size());
      } catch (const std::exception&) {
        client_ok = false;
      }
      if (!client_ok) {
        if (!state.stop) {
          // The client went away mid-body: nothing will be answered, so drop upstream at once.
          state.client_failed = true;
          close_socket(upstream);
        }
        break;
      }
      boost::system::error_code ec;
      if (n == 0) {
        if (framing == BodyFraming::chunked) {
          const auto last = bhttp::make_chunk_last();
          co_await net::async_write(upstream, last, net::redirect_error(net::use_awaitable, ec));
        }
        through = !ec;
        break;
      }
      const auto data = net::buffer(buf.data(), n);
      if (framing == BodyFraming::chunked) {
        const auto chunk = bhttp::make_chunk(data);
        co_await net::async_write(upstream, chunk, net::redirect_error(net::use_awaitable, ec));
      } else {
        co_await net::async_write(upstream, data, net::redirect_error(net::use_awaitable, ec));
      }
      // Upstream stopped taking the body (it may have answered early): the response half decides.
      if (ec) break;
    }
  }
  state.body_through = through;
  if (through) {
    // Now any byte or EOF from the client is news: a departed client ends the relay at once
    // instead of at the next write, which for a quiet stream could be minutes away.
    exchange.watch_peer(&state.wake);
    while (!state.stop) {
      if (exchange.peer_gone()) {
        state.client_failed = true;
        close_socket(upstream);
        break;
      }
      co_await state.wake.wait();
    }
  }
  state.done = true;
  state.finished.notify_all();
}

// Stops the upload coroutine and the peer watch; returns once neither touches anything.
net::awaitable<void> stop_upload(Exchange& exchange, Socket& upstream, UploadState& state) {
  state.stop = true;
  if (!state.done && !state.body_through) {
    // Still reading the request body: the rest of it is not wanted (and the connection cannot
    // be reused with an unread body).
    exchange.close_after();
    boost::system::error_code ignored;
    exchange.socket().cancel(ignored);
    close_socket(upstream);
  }
  state.wake.notify_all();
  while (!state.done) co_await state.finished.wait();
  co_await exchange.stop_watching_peer();
}

BodyFraming request_framing(const Exchange& exchange) {
  if (exchange.body_done()) return BodyFraming::none;
  // Beast accepts a request Transfer-Encoding only when it ends in chunked.
  return exchange.has_header("Transfer-Encoding") ? BodyFraming::chunked : BodyFraming::sized;
}
}  // namespace

net::awaitable<RelayOutcome> relay_exchange(Exchange& exchange, Socket& upstream, RelayOptions options,
                                            std::string cors_origin) {
  const BodyFraming framing = request_framing(exchange);
  const std::string head = upstream_request_head(exchange.method(), exchange.target(), exchange.headers(), framing);
  boost::system::error_code ec;
  co_await net::async_write(upstream, net::buffer(head), net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    close_socket(upstream);
    co_return RelayOutcome::upstream_failed_before_head;
  }

  auto executor = exchange.socket().get_executor();
  UploadState state(executor);
  net::co_spawn(executor, upload(exchange, upstream, framing, options.piece, state), net::detached);

  const bool head_request = exchange.method() == "HEAD";
  beast::flat_buffer upstream_buffer;
  // Beast sizes each socket read by the buffer's free room: without it, bodies arrive 512 bytes
  // per system call.
  upstream_buffer.reserve(options.piece);
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser;
  bool have_head = false;
  for (;;) {
    parser.emplace();
    parser->header_limit(kHeaderLimit);
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (head_request) parser->skip(true);
    co_await bhttp::async_read_header(upstream, upstream_buffer, *parser,
                                      net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
    // Interim answers (103 Early Hints) are not relayed; 100 cannot come (Expect is not
    // forwarded) and neither can 101 (Upgrade is not forwarded).
    if (parser->get().result_int() / 100 == 1) continue;
    have_head = true;
    break;
  }
  if (!have_head) {
    close_socket(upstream);
    co_await stop_upload(exchange, upstream, state);
    if (state.client_failed) {
      exchange.close_after();
      co_return RelayOutcome::client_gone;
    }
    co_return RelayOutcome::upstream_failed_before_head;
  }

  auto& response = parser->get();
  const unsigned status = response.result_int();
  const bool bodiless = head_request || status == 204 || status == 304;
  Fields fields = end_to_end_headers(response.base());
  if (!cors_origin.empty() && fields.find(bhttp::field::access_control_allow_origin) == fields.end()) {
    fields.set(bhttp::field::access_control_allow_origin, cors_origin);
    fields.insert(bhttp::field::vary, "Origin");
  }
  bool chunked_out = false;
  if (bodiless) {
    if (status == 204) fields.erase(bhttp::field::content_length);
  } else if (parser->content_length()) {
    // Sized: the upstream's Content-Length passes through.
  } else if (exchange.version() >= 11) {
    fields.erase(bhttp::field::content_length);
    fields.set(bhttp::field::transfer_encoding, "chunked");
    chunked_out = true;
  } else {
    // An HTTP/1.0 client knows no chunking: the body ends with the connection.
    fields.erase(bhttp::field::content_length);
    exchange.close_after();
  }
  if (!state.body_through) exchange.close_after();  // answered before the body was all read

  RelayOutcome outcome = RelayOutcome::completed;
  bool head_sent = co_await exchange.begin_relayed(status, fields);
  if (!head_sent) outcome = RelayOutcome::client_gone;

  if (head_sent && !bodiless) {
    StreamBuffer buf(options.piece);
    while (!parser->is_done()) {
      auto& body = parser->get().body();
      body.data = buf.data();
      body.size = buf.size();
      co_await bhttp::async_read_some(upstream, upstream_buffer, *parser,
                                      net::redirect_error(net::use_awaitable, ec));
      if (ec == bhttp::error::need_buffer) ec = {};
      const size_t n = buf.size() - parser->get().body().size;
      if (n > 0) {
        const std::string_view piece(buf.data(), n);
        bool delivered = false;
        if (chunked_out) {
          delivered = co_await exchange.write_chunk(piece);
        } else {
          delivered = co_await exchange.write_body(piece);
        }
        if (!delivered) {
          outcome = RelayOutcome::client_gone;
          break;
        }
      }
      if (ec) {
        outcome = state.client_failed ? RelayOutcome::client_gone : RelayOutcome::upstream_failed;
        break;
      }
    }
  }

  if (outcome == RelayOutcome::completed) {
    if (chunked_out) co_await exchange.finish_stream();
  } else {
    // No clean end: whatever the client got so far is all it gets.
    exchange.close_after();
    close_socket(upstream);
  }
  co_await stop_upload(exchange, upstream, state);
  if (outcome == RelayOutcome::completed && state.client_failed) outcome = RelayOutcome::client_gone;
  co_return outcome;
}

}  // namespace cove::shim::edge
