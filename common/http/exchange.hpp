#pragma once
// One HTTP/1.1 request and its response on a connection. Handlers read the body at their own pace
// (whole or in pieces) and answer with a complete response or a chunked stream whose every chunk
// goes to the socket at once.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "async/event.hpp"

namespace cove::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using Socket = net::generic::stream_protocol::socket;
using Fields = bhttp::fields;

class Exchange {
 public:
  Exchange(Socket& socket, beast::flat_buffer& buffer,
           bhttp::request_parser<bhttp::buffer_body>& parser);
  ~Exchange();

  // Request.
  std::string_view method() const { return method_; }
  unsigned version() const;  // 11 for HTTP/1.1, 10 for HTTP/1.0
  std::string_view target() const { return target_; }
  std::string_view path() const { return path_; }
  std::string_view query() const { return query_; }
  std::string_view header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  const Fields& headers() const;
  // First value of a query parameter, percent-decoded.
  std::optional<std::string> query_param(std::string_view name) const;

  // Body. read_some returns 0 at the end of the body; throws on a broken connection.
  net::awaitable<size_t> read_body_some(char* data, size_t capacity);
  // Whole body, or nullopt if it exceeds `limit` (the connection is then closed after replying).
  net::awaitable<std::optional<std::string>> read_body_all(size_t limit);
  bool body_done() const;
  // The client sent "Expect: 100-continue" and is still waiting for it: nothing of the body has
  // been asked for, so an early answer needs no draining.
  bool continue_pending() const;

  // Headers every response of this exchange carries (e.g. CORS); set before responding.
  Fields& response_headers() { return response_headers_; }

  // Complete response. Empty content_type omits the header.
  net::awaitable<void> respond(unsigned status, std::string_view content_type, std::string body);

  // Chunked stream: begin, any number of chunks (each written and flushed), then finish.
  // write_chunk returns false once the peer is gone; the caller should stop streaming.
  net::awaitable<void> begin_stream(unsigned status, std::string_view content_type);
  net::awaitable<bool> write_chunk(std::string_view data);
  net::awaitable<void> finish_stream();

  // Fixed-length streamed body: the header with Content-Length: `length`, then write_body
  // pieces totalling exactly `length` bytes. A body that cannot be completed must end the
  // connection (close_after()). write_body returns false once the peer is gone.
  net::awaitable<void> begin_sized(unsigned status, std::string_view content_type, std::uint64_t length);
  net::awaitable<bool> write_body(std::string_view data);

  // A relayed response header (a proxy passing on an upstream answer): `fields` as given plus
  // response_headers(); the caller's fields carry the framing (Content-Length, or
  // Transfer-Encoding: chunked, or neither for a bodiless answer) and the body follows through
  // write_body or write_chunk + finish_stream. False once the peer is gone.
  net::awaitable<bool> begin_relayed(unsigned status, const Fields& fields);

  // 101 Switching Protocols with `fields` verbatim (Connection: Upgrade and Upgrade included):
  // after it the connection is a raw tunnel the caller owns, so the exchange closes after it.
  net::awaitable<bool> begin_switched(const Fields& fields);
  // Bytes the client sent after the request that were already read off the socket (a tunnel
  // must pass them on). Only meaningful once the body is done.
  std::string take_buffered();

  // The raw connection, for a proxy (e.g. to cancel a body read it no longer wants). Anything
  // written here bypasses the exchange's bookkeeping.
  Socket& socket() { return socket_; }

  bool responded() const { return responded_; }
  void close_after() { close_ = true; }
  bool should_close() const { return close_; }

  // While a stream runs after the request body is complete, watch the socket so a client that
  // goes away is noticed at once, not at the next write. `wake` is notified when that happens.
  void watch_peer(async::Event* wake);
  bool peer_gone() const;
  net::awaitable<void> stop_watching_peer();

 struct PeerWatch;

 private:
  net::awaitable<void> write_streaming_header(unsigned status, std::string_view content_type,
                                              std::optional<std::uint64_t> length);
  template <typename Buffers>
  net::awaitable<bool> write_raw(const Buffers& buffers);
  net::awaitable<void> send_continue_if_expected();

  Socket& socket_;
  beast::flat_buffer& buffer_;
  bhttp::request_parser<bhttp::buffer_body>& parser_;
  std::string method_, target_, path_, query_;
  Fields response_headers_;
  bool responded_ = false;
  bool close_ = false;
  bool continue_sent_ = false;
  bool stream_broken_ = false;

  std::shared_ptr<PeerWatch> watch_;
  bool peer_gone_ = false;
};

// Percent-decoding as Go's url.QueryUnescape ('+' is a space). nullopt on a bad escape.
std::optional<std::string> query_unescape(std::string_view s);

}  // namespace cove::http
