#include "edge/h2_gateway.hpp"

#include <nghttp2/nghttp2.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "async/event.hpp"
#include "edge/forwarded_headers.hpp"
#include "edge/socket_pair.hpp"
#include "edge/stream_buffer.hpp"

namespace cove::shim::edge {
namespace {
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using http::Socket;

constexpr size_t kReadPiece = 16 * 1024;
constexpr size_t kWriteBatch = 256 * 1024;
constexpr size_t kResponsePiece = 256 * 1024;
constexpr size_t kResponseHeaderLimit = 64 * 1024;
// A connection with no streams and no frames for this long is closed (as the HTTP/1.1 loop's
// idle timeout; longer than E2B's proxy idle timeout of 620 s).
constexpr auto kIdleTimeout = std::chrono::seconds(640);

// Header fields that describe one HTTP/1.1 connection and never cross into HTTP/2.
bool is_connection_specific(std::string_view lower_name) {
  return lower_name == "connection" || lower_name == "keep-alive" || lower_name == "proxy-connection" ||
         lower_name == "transfer-encoding" || lower_name == "upgrade" || lower_name == "te";
}

// What may go into an HTTP/1.1 request line or header without changing its meaning.
bool is_safe_field_text(std::string_view text) {
  return std::none_of(text.begin(), text.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f || c == ' ';
  });
}

bool is_safe_header_value(std::string_view text) {
  return std::none_of(text.begin(), text.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

struct Stream {
  Stream(int32_t stream_id, const net::any_io_executor& ex)
      : id(stream_id), upload_wake(ex), download_wake(ex) {}
  int32_t id;
  // Request, as it arrives.
  std::string method, path, authority;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string cookies;
  size_t header_bytes = 0;
  bool has_content_length = false;
  bool request_complete = false;  // END_STREAM seen
  bool started = false;

  // Request body on its way to the handler (already framed), and the DATA bytes it holds that
  // are not yet given back to the client's flow-control window.
  std::string upload;
  size_t upload_unacked = 0;
  bool chunked_upload = false;
  async::Event upload_wake;

  // Response body on its way to the client.
  std::string download;
  size_t download_offset = 0;
  bool download_done = false;   // the whole body is in `download`
  bool download_broken = false; // the handler's response ended before its body did
  bool deferred = false;        // nghttp2 waits for resume_data
  async::Event download_wake;

  std::optional<Socket> gateway;  // the edge's end of the pair
  bool closed = false;            // nghttp2 closed the stream

  size_t download_pending() const { return download.size() - download_offset; }
};

class Connection {
 public:
  Connection(TlsStream& tls, const http::Handler& handler, Http2Limits limits)
      : tls_(tls), handler_(handler), limits_(limits), executor_(tls.get_executor()), write_wake_(executor_),
        idle_(executor_), pumps_done_(executor_) {}
  ~Connection() {
    if (session_ != nullptr) nghttp2_session_del(session_);
  }

  net::awaitable<void> run();

 private:
  // nghttp2 callbacks.
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                       const uint8_t* value, size_t valuelen, uint8_t flags, void* self);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_data_chunk(nghttp2_session*, uint8_t flags, int32_t stream_id, const uint8_t* data, size_t len,
                           void* self);
  static int on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* self);
  static ssize_t read_response_body(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                                    uint32_t* data_flags, nghttp2_data_source* source, void* self);

  bool setup();
  std::shared_ptr<Stream> find(int32_t id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second;
  }
  void start(const std::shared_ptr<Stream>& stream);
  void answer_directly(const std::shared_ptr<Stream>& stream, unsigned status);
  void reset(const std::shared_ptr<Stream>& stream, uint32_t code);
  void resume(Stream& stream);
  void kick() { write_wake_.notify_all(); }

  net::awaitable<void> read_loop();
  net::awaitable<void> write_loop();
  net::awaitable<void> idle_watch();
  net::awaitable<void> counted(net::awaitable<void> work);
  net::awaitable<void> upload_pump(std::shared_ptr<Stream> stream);
  net::awaitable<void> download_pump(std::shared_ptr<Stream> stream);
  // Every coroutine that touches this object is counted; run() returns only when none is left.
  void finish_coroutine(Stream&) {
    --pumps_;
    pumps_done_.notify_all();
  }

  TlsStream& tls_;
  const http::Handler& handler_;
  Http2Limits limits_;
  net::any_io_executor executor_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::shared_ptr<Stream>> streams_;
  async::Event write_wake_;
  async::Event idle_;
  int pumps_ = 0;
  async::Event pumps_done_;
  bool reading_done_ = false;
  bool writing_done_ = false;
  bool fatal_ = false;
  std::chrono::steady_clock::time_point last_activity_ = std::chrono::steady_clock::now();
};

int Connection::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto* c = static_cast<Connection*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  c->streams_[frame->hd.stream_id] = std::make_shared<Stream>(frame->hd.stream_id, c->executor_);
  return 0;
}

int Connection::on_header(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name_data,
                          size_t namelen, const uint8_t* value_data, size_t valuelen, uint8_t, void* self) {
  auto* c = static_cast<Connection*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto stream = c->find(frame->hd.stream_id);
  if (!stream) return 0;
  if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;  // trailers carry nothing we pass on
  stream->header_bytes += namelen + valuelen + 32;
  if (stream->header_bytes > c->limits_.header_list_limit) {
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_ENHANCE_YOUR_CALM);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  std::string_view name(reinterpret_cast<const char*>(name_data), namelen);
  std::string_view value(reinterpret_cast<const char*>(value_data), valuelen);
  if (name == ":method") {
    stream->method = value;
  } else if (name == ":path") {
    stream->path = value;
  } else if (name == ":authority") {
    stream->authority = value;
  } else if (name.starts_with(":")) {
    // :scheme (and :protocol, which is never enabled) say nothing the handler needs.
  } else if (name == "host") {
    if (stream->authority.empty()) stream->authority = value;
  } else if (name == "cookie") {
    // HTTP/2 splits cookies into separate fields; HTTP/1.1 wants one line.
    if (!stream->cookies.empty()) stream->cookies += "; ";
    stream->cookies += value;
  } else if (name == "expect" || is_connection_specific(name)) {
    // The gateway answers flow control itself; nghttp2 already refuses connection fields.
  } else {
    if (name == "content-length") stream->has_content_length = true;
    stream->headers.emplace_back(name, value);
  }
  return 0;
}

int Connection::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto* c = static_cast<Connection*>(self);
  auto stream = c->find(frame->hd.stream_id);
  if (!stream) return 0;
  const bool ends = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS) {
    if (ends) stream->request_complete = true;
    if (!stream->started && (frame->hd.flags & NGHTTP2_FLAG_END_HEADERS) != 0) c->start(stream);
  } else if (frame->hd.type == NGHTTP2_DATA && ends) {
    stream->request_complete = true;
  }
  if (ends) stream->upload_wake.notify_all();
  return 0;
}

int Connection::on_data_chunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                              void* self) {
  auto* c = static_cast<Connection*>(self);
  auto stream = c->find(stream_id);
  if (!stream || !stream->gateway) {
    // Not for a live exchange: give the window back at once.
    nghttp2_session_consume(session, stream_id, len);
    return 0;
  }
  if (len == 0) return 0;
  if (stream->chunked_upload) {
    char size_line[24];
    int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", len);
    stream->upload.append(size_line, static_cast<size_t>(n));
  }
  stream->upload.append(reinterpret_cast<const char*>(data), len);
  if (stream->chunked_upload) stream->upload.append("\r\n");
  stream->upload_unacked += len;
  stream->upload_wake.notify_all();
  return 0;
}

int Connection::on_stream_close(nghttp2_session* session, int32_t stream_id, uint32_t, void* self) {
  auto* c = static_cast<Connection*>(self);
  auto it = c->streams_.find(stream_id);
  if (it == c->streams_.end()) return 0;
  auto stream = it->second;
  c->streams_.erase(it);
  stream->closed = true;
  // Bytes that never reached the handler still count against the connection window.
  if (stream->upload_unacked > 0) nghttp2_session_consume_connection(session, stream->upload_unacked);
  stream->upload_unacked = 0;
  stream->upload.clear();
  if (stream->gateway) {
    // The handler sees its client gone, which cancels the work behind the stream.
    boost::system::error_code ignored;
    stream->gateway->close(ignored);
  }
  stream->upload_wake.notify_all();
  stream->download_wake.notify_all();
  c->idle_.notify_all();
  return 0;
}

ssize_t Connection::read_response_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* data_flags,
                                       nghttp2_data_source* source, void*) {
  auto* stream = static_cast<Stream*>(source->ptr);
  size_t pending = stream->download_pending();
  if (pending == 0) {
    if (stream->download_done) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      return 0;
    }
    // A response cut short: the client must not take it for a complete one.
    if (stream->download_broken) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    stream->deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  size_t n = std::min(pending, length);
  std::memcpy(buf, stream->download.data() + stream->download_offset, n);
  stream->download_offset += n;
  if (stream->download_pending() == 0) {
    stream->download.clear();
    stream->download_offset = 0;
    if (stream->download_done) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  }
  stream->download_wake.notify_all();
  return static_cast<ssize_t>(n);
}

bool Connection::setup() {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return false;
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) {
    nghttp2_session_callbacks_del(callbacks);
    return false;
  }
  // Request bytes are acknowledged only once the handler took them: the client cannot make the
  // edge buffer more than the windows.
  nghttp2_option_set_no_auto_window_update(option, 1);
  int rv = nghttp2_session_server_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) return false;

  const std::array<nghttp2_settings_entry, 3> settings = {{
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(limits_.stream_window)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(limits_.header_list_limit)},
  }};
  if (nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size()) != 0) return false;
  return nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, limits_.connection_window) == 0;
}

void Connection::reset(const std::shared_ptr<Stream>& stream, uint32_t code) {
  if (!stream->closed) nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream->id, code);
  kick();
}

void Connection::resume(Stream& stream) {
  if (stream.deferred && !stream.closed) {
    stream.deferred = false;
    nghttp2_session_resume_data(session_, stream.id);
  }
  kick();
}

void Connection::answer_directly(const std::shared_ptr<Stream>& stream, unsigned status) {
  const std::string code = std::to_string(status);
  nghttp2_nv nv[] = {{reinterpret_cast<uint8_t*>(const_cast<char*>(":status")),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(code.c_str())), 7, code.size(),
                      NGHTTP2_NV_FLAG_NONE}};
  nghttp2_submit_response(session_, stream->id, nv, 1, nullptr);
  kick();
}

void Connection::start(const std::shared_ptr<Stream>& stream) {
  stream->started = true;
  // CONNECT (and anything that is not an origin-form request) has no HTTP/1.1 equivalent here.
  if (stream->method.empty() || stream->method == "CONNECT" || stream->path.empty() ||
      (stream->path.front() != '/' && stream->path != "*") || !is_safe_field_text(stream->method) ||
      !is_safe_field_text(stream->path) || !is_safe_field_text(stream->authority)) {
    answer_directly(stream, stream->method == "CONNECT" ? 405 : 400);
    return;
  }
  for (const auto& [name, value] : stream->headers) {
    if (!is_safe_header_value(value)) {
      answer_directly(stream, 400);
      return;
    }
  }
  std::pair<Socket, Socket> pair{Socket(executor_), Socket(executor_)};
  try {
    pair = make_socket_pair(executor_);
  } catch (const std::exception&) {
    answer_directly(stream, 503);  // out of descriptors: try again later
    return;
  }
  stream->gateway.emplace(std::move(pair.first));
  net::co_spawn(executor_, http::serve_connection(std::move(pair.second), std::string(), handler_), net::detached);

  // The request head, as an HTTP/1.1 client would have sent it.
  std::string head;
  head.reserve(256);
  head.append(stream->method).append(" ").append(stream->path).append(" HTTP/1.1\r\nHost: ");
  head.append(stream->authority).append("\r\n");
  for (const auto& [name, value] : stream->headers) head.append(name).append(": ").append(value).append("\r\n");
  if (!stream->cookies.empty()) head.append("cookie: ").append(stream->cookies).append("\r\n");
  if (!stream->request_complete && !stream->has_content_length) {
    stream->chunked_upload = true;
    head.append("Transfer-Encoding: chunked\r\n");
  }
  head.append("Connection: close\r\n\r\n");
  stream->upload.insert(0, head);

  pumps_ += 2;
  net::co_spawn(executor_, upload_pump(stream), net::detached);
  net::co_spawn(executor_, download_pump(stream), net::detached);
}

net::awaitable<void> Connection::upload_pump(std::shared_ptr<Stream> stream) {
  Socket& gateway = *stream->gateway;
  bool ended = false;
  while (!stream->closed) {
    if (stream->upload.empty()) {
      if (stream->request_complete && !ended) {
        ended = true;
        if (stream->chunked_upload) {
          stream->upload = "0\r\n\r\n";
          continue;
        }
      }
      if (ended) break;
      co_await stream->upload_wake.wait();
      continue;
    }
    std::string batch = std::move(stream->upload);
    stream->upload.clear();
    const size_t acked = stream->upload_unacked;
    stream->upload_unacked = 0;
    boost::system::error_code ec;
    co_await net::async_write(gateway, net::buffer(batch), net::redirect_error(net::use_awaitable, ec));
    if (stream->closed) {
      // on_stream_close gave back only the bytes still queued; these were in flight and still
      // hold the connection window.
      if (acked > 0) nghttp2_session_consume_connection(session_, acked);
      kick();
      break;
    }
    if (ec) {
      // The handler stopped reading (it answered early or went away): the rest is not wanted,
      // but the window must still reopen for the connection's other streams.
      nghttp2_session_consume(session_, stream->id, acked + stream->upload_unacked);
      stream->upload_unacked = 0;
      stream->upload.clear();
      if (!stream->request_complete) {
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_NO_ERROR);
      }
      kick();
      break;
    }
    if (acked > 0) {
      nghttp2_session_consume(session_, stream->id, acked);
      kick();
    }
  }
  finish_coroutine(*stream);
}

net::awaitable<void> Connection::download_pump(std::shared_ptr<Stream> stream) {
  Socket& gateway = *stream->gateway;
  beast::flat_buffer buffer;
  // Beast sizes each socket read by the buffer's free room: without room, a body arrives 512
  // bytes per system call.
  buffer.reserve(kResponsePiece);
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.header_limit(kResponseHeaderLimit);
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  const bool head_request = stream->method == "HEAD";
  if (head_request) parser.skip(true);
  boost::system::error_code ec;
  co_await bhttp::async_read_header(gateway, buffer, parser, net::redirect_error(net::use_awaitable, ec));
  if (ec || stream->closed) {
    // The handler always answers unless the connection broke under it.
    if (!stream->closed) reset(stream, NGHTTP2_INTERNAL_ERROR);
    finish_coroutine(*stream);
    co_return;
  }

  const auto& response = parser.get();
  const std::string status = std::to_string(response.result_int());
  std::vector<std::pair<std::string, std::string>> fields;
  fields.reserve(16);
  for (const auto& f : response) {
    std::string name(f.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (is_connection_specific(name)) continue;
    fields.emplace_back(std::move(name), std::string(f.value()));
  }
  std::vector<nghttp2_nv> nv;
  nv.reserve(fields.size() + 1);
  auto add = [&nv](const std::string& name, const std::string& value) {
    nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                  reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                  NGHTTP2_NV_FLAG_NONE});
  };
  const std::string status_name = ":status";
  add(status_name, status);
  for (const auto& [name, value] : fields) add(name, value);

  const unsigned code = response.result_int();
  const bool bodiless = head_request || code == 204 || code == 304 || parser.is_done();
  if (bodiless) {
    nghttp2_submit_response(session_, stream->id, nv.data(), nv.size(), nullptr);
    kick();
    finish_coroutine(*stream);
    co_return;
  }
  nghttp2_data_provider provider{};
  provider.source.ptr = stream.get();
  provider.read_callback = read_response_body;
  nghttp2_submit_response(session_, stream->id, nv.data(), nv.size(), &provider);
  kick();

  StreamBuffer piece(kResponsePiece);
  while (!parser.is_done() && !stream->closed) {
    if (stream->download_pending() >= limits_.response_buffer) {
      co_await stream->download_wake.wait();
      continue;
    }
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    co_await bhttp::async_read_some(gateway, buffer, parser, net::redirect_error(net::use_awaitable, ec));
    if (ec == bhttp::error::need_buffer) ec = {};
    if (stream->closed) break;
    const size_t n = piece.size() - parser.get().body().size;
    if (n > 0) {
      if (stream->download_offset > 0 && stream->download_offset >= stream->download.size() / 2) {
        stream->download.erase(0, stream->download_offset);
        stream->download_offset = 0;
      }
      stream->download.append(piece.data(), n);
    }
    if (ec) {
      stream->download_broken = true;
      break;
    }
    if (parser.is_done()) stream->download_done = true;
    resume(*stream);
  }
  if (!stream->closed) resume(*stream);
  finish_coroutine(*stream);
}

net::awaitable<void> Connection::read_loop() {
  StreamBuffer buf(kReadPiece);
  boost::system::error_code ec;
  while (!fatal_) {
    size_t n = co_await tls_.async_read_some(net::buffer(buf.data(), buf.size()), net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
    last_activity_ = std::chrono::steady_clock::now();
    ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(buf.data()), n);
    if (rv < 0) {
      // A protocol error: nghttp2 queued a GOAWAY; the writer sends it and ends.
      fatal_ = true;
    }
    kick();
  }
  reading_done_ = true;
  kick();
  idle_.notify_all();
}

net::awaitable<void> Connection::write_loop() {
  std::string batch;
  boost::system::error_code ec;
  for (;;) {
    batch.clear();
    while (batch.size() < kWriteBatch) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        fatal_ = true;
        break;
      }
      if (n == 0) break;
      batch.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (!batch.empty()) {
      co_await net::async_write(tls_, net::buffer(batch), net::redirect_error(net::use_awaitable, ec));
      if (ec) break;
      last_activity_ = std::chrono::steady_clock::now();
      continue;
    }
    if (fatal_ || reading_done_) break;
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) break;
    co_await write_wake_.wait();
  }
  writing_done_ = true;
  idle_.notify_all();
}

net::awaitable<void> Connection::idle_watch() {
  while (!reading_done_ && !writing_done_) {
    const auto now = std::chrono::steady_clock::now();
    if (!streams_.empty()) {
      // Open streams keep the connection; the last one closing wakes us.
      co_await idle_.wait_until(now + kIdleTimeout);
      continue;
    }
    const auto deadline = last_activity_ + kIdleTimeout;
    if (now >= deadline) {
      nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
      kick();
      break;
    }
    co_await idle_.wait_until(deadline);
  }
}

net::awaitable<void> Connection::counted(net::awaitable<void> work) {
  co_await std::move(work);
  --pumps_;
  pumps_done_.notify_all();
}

net::awaitable<void> Connection::run() {
  if (!setup()) co_return;
  // The reader runs beside the writer; idle_watch ends a connection nothing happens on.
  pumps_ += 2;
  net::co_spawn(executor_, counted(read_loop()), net::detached);
  net::co_spawn(executor_, counted(idle_watch()), net::detached);
  co_await write_loop();

  // The connection is over: stop reading, close every stream's pair, wait for all coroutines
  // that reference this object.
  boost::system::error_code ignored;
  tls_.next_layer().cancel(ignored);
  idle_.notify_all();
  for (auto& [id, stream] : streams_) {
    stream->closed = true;
    if (stream->gateway) stream->gateway->close(ignored);
    stream->upload_wake.notify_all();
    stream->download_wake.notify_all();
  }
  while (pumps_ > 0) {
    idle_.notify_all();
    co_await pumps_done_.wait_until(async::Clock::now() + std::chrono::milliseconds(100));
  }
  streams_.clear();
}
}  // namespace

net::awaitable<void> serve_http2(TlsStream& stream, const http::Handler& handler, Http2Limits limits) {
  Connection connection(stream, handler, limits);
  co_await connection.run();
}

}  // namespace cove::shim::edge
