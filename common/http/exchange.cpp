#include "http/exchange.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>

namespace cove::http {
namespace {
std::string_view sv(boost::beast::string_view s) { return {s.data(), s.size()}; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<std::string> query_unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

struct Exchange::PeerWatch {
  std::array<char, 512> buf{};
  bool pending = false;
  bool gone = false;
  std::string pipelined;  // bytes of a next request that arrived while watching
  async::Event* wake = nullptr;
  std::unique_ptr<async::Event> finished;
};

Exchange::Exchange(Socket& socket, beast::flat_buffer& buffer,
                   bhttp::request_parser<bhttp::buffer_body>& parser)
    : socket_(socket), buffer_(buffer), parser_(parser) {
  const auto& req = parser_.get();
  method_ = std::string(sv(req.method_string()));
  target_ = std::string(sv(req.target()));
  auto q = target_.find('?');
  path_ = target_.substr(0, q);
  if (q != std::string::npos) query_ = target_.substr(q + 1);
}

Exchange::~Exchange() = default;

std::string_view Exchange::header(std::string_view name) const {
  auto it = parser_.get().find(boost::beast::string_view(name.data(), name.size()));
  if (it == parser_.get().end()) return {};
  return sv(it->value());
}

bool Exchange::has_header(std::string_view name) const {
  return parser_.get().find(boost::beast::string_view(name.data(), name.size())) !=
         parser_.get().end();
}

const Fields& Exchange::headers() const { return parser_.get().base(); }

std::optional<std::string> Exchange::query_param(std::string_view name) const {
  std::string_view q = query_;
  while (!q.empty()) {
    auto amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    auto eq = pair.find('=');
    auto key = query_unescape(pair.substr(0, eq));
    if (!key || *key != name) continue;
    if (eq == std::string_view::npos) return std::string();
    return query_unescape(pair.substr(eq + 1));
  }
  return std::nullopt;
}

unsigned Exchange::version() const { return parser_.get().version(); }

bool Exchange::body_done() const { return parser_.is_done(); }

bool Exchange::continue_pending() const {
  return !continue_sent_ && beast::iequals(parser_.get()[bhttp::field::expect], "100-continue");
}

net::awaitable<void> Exchange::send_continue_if_expected() {
  if (continue_sent_) co_return;
  continue_sent_ = true;
  if (!beast::iequals(parser_.get()[bhttp::field::expect], "100-continue")) co_return;
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  co_await net::async_write(socket_, net::buffer(kContinue.data(), kContinue.size()),
                            net::use_awaitable);
}

net::awaitable<size_t> Exchange::read_body_some(char* data, size_t capacity) {
  co_await send_continue_if_expected();
  // Beast sizes each socket read by the free space of the connection buffer (512 bytes at
  // least); without room, large bodies arrive 512 bytes per system call.
  constexpr size_t kReadRoom = 64 * 1024;
  if (size_t want = std::min(capacity, kReadRoom); buffer_.capacity() - buffer_.size() < want) {
    buffer_.reserve(buffer_.size() + want);
  }
  while (!parser_.is_done()) {
    auto& body = parser_.get().body();
    body.data = data;
    body.size = capacity;
    boost::system::error_code ec;
    co_await bhttp::async_read_some(socket_, buffer_, parser_,
                                    net::redirect_error(net::use_awaitable, ec));
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) {
      close_ = true;
      throw boost::system::system_error(ec);
    }
    size_t stored = capacity - parser_.get().body().size;
    if (stored > 0) co_return stored;
  }
  co_return 0;
}

net::awaitable<std::optional<std::string>> Exchange::read_body_all(size_t limit) {
  std::string out;
  std::array<char, 16384> chunk;
  for (;;) {
    size_t n = co_await read_body_some(chunk.data(), chunk.size());
    if (n == 0) break;
    if (out.size() + n > limit) {
      close_ = true;
      co_return std::nullopt;
    }
    out.append(chunk.data(), n);
  }
  co_return out;
}

net::awaitable<void> Exchange::respond(unsigned status, std::string_view content_type,
                                       std::string body) {
  bhttp::response<bhttp::string_body> res;
  for (const auto& f : response_headers_) res.set(f.name_string(), f.value());
  res.result(status);
  res.version(parser_.get().version());
  if (!content_type.empty()) {
    res.set(bhttp::field::content_type,
            boost::beast::string_view(content_type.data(), content_type.size()));
  }
  res.body() = std::move(body);
  // 1xx/204/304 carry no body and no Content-Length.
  if (status != 204 && status != 304 && status >= 200) res.prepare_payload();
  res.keep_alive(parser_.get().keep_alive() && !close_);
  responded_ = true;
  boost::system::error_code ec;
  co_await bhttp::async_write(socket_, res, net::redirect_error(net::use_awaitable, ec));
  if (ec) close_ = true;
}

// A response header for a body that follows in pieces: chunked, or of a known length.
net::awaitable<void> Exchange::write_streaming_header(unsigned status, std::string_view content_type,
                                                      std::optional<std::uint64_t> length) {
  bhttp::response<bhttp::empty_body> res;
  for (const auto& f : response_headers_) res.set(f.name_string(), f.value());
  res.result(status);
  res.version(parser_.get().version());
  if (!content_type.empty()) {
    res.set(bhttp::field::content_type, boost::beast::string_view(content_type.data(), content_type.size()));
  }
  if (length) {
    res.content_length(*length);
  } else {
    res.chunked(true);
  }
  res.keep_alive(parser_.get().keep_alive() && !close_);
  responded_ = true;
  bhttp::response_serializer<bhttp::empty_body> sr{res};
  boost::system::error_code ec;
  co_await bhttp::async_write_header(socket_, sr, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    stream_broken_ = true;
    close_ = true;
  }
}

net::awaitable<bool> Exchange::begin_relayed(unsigned status, const Fields& fields) {
  bhttp::response<bhttp::empty_body> res;
  for (const auto& f : fields) res.insert(f.name_string(), f.value());
  for (const auto& f : response_headers_) res.set(f.name_string(), f.value());
  res.result(status);
  res.version(parser_.get().version());
  res.keep_alive(parser_.get().keep_alive() && !close_);
  responded_ = true;
  bhttp::response_serializer<bhttp::empty_body> sr{res};
  boost::system::error_code ec;
  co_await bhttp::async_write_header(socket_, sr, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    stream_broken_ = true;
    close_ = true;
    co_return false;
  }
  co_return true;
}

net::awaitable<bool> Exchange::begin_switched(const Fields& fields) {
  bhttp::response<bhttp::empty_body> res;
  for (const auto& f : fields) res.insert(f.name_string(), f.value());
  for (const auto& f : response_headers_) res.set(f.name_string(), f.value());
  res.result(bhttp::status::switching_protocols);
  res.version(11);
  responded_ = true;
  close_ = true;
  bhttp::response_serializer<bhttp::empty_body> sr{res};
  boost::system::error_code ec;
  co_await bhttp::async_write_header(socket_, sr, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    stream_broken_ = true;
    co_return false;
  }
  co_return true;
}

std::string Exchange::take_buffered() {
  std::string bytes(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  buffer_.consume(buffer_.size());
  return bytes;
}

net::awaitable<void> Exchange::begin_stream(unsigned status, std::string_view content_type) {
  co_await write_streaming_header(status, content_type, std::nullopt);
}

net::awaitable<void> Exchange::begin_sized(unsigned status, std::string_view content_type, std::uint64_t length) {
  co_await write_streaming_header(status, content_type, length);
}

template <typename Buffers>
net::awaitable<bool> Exchange::write_raw(const Buffers& buffers) {
  if (stream_broken_) co_return false;
  boost::system::error_code ec;
  co_await net::async_write(socket_, buffers, net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    stream_broken_ = true;
    close_ = true;
    co_return false;
  }
  co_return true;
}

net::awaitable<bool> Exchange::write_chunk(std::string_view data) {
  if (data.empty()) co_return !stream_broken_;  // an empty chunk would end the body
  const auto chunk = bhttp::make_chunk(net::buffer(data.data(), data.size()));
  co_return co_await write_raw(chunk);
}

net::awaitable<bool> Exchange::write_body(std::string_view data) {
  if (data.empty()) co_return !stream_broken_;
  const auto body = net::buffer(data.data(), data.size());
  co_return co_await write_raw(body);
}

net::awaitable<void> Exchange::finish_stream() {
  if (stream_broken_) co_return;
  boost::system::error_code ec;
  co_await net::async_write(socket_, bhttp::make_chunk_last(),
                            net::redirect_error(net::use_awaitable, ec));
  if (ec) close_ = true;
}

namespace {
void arm_peer_watch(Socket& socket, std::shared_ptr<Exchange::PeerWatch> w) {
  w->pending = true;
  socket.async_read_some(net::buffer(w->buf), [&socket, w](boost::system::error_code ec, size_t n) {
    w->pending = false;
    if (ec == net::error::operation_aborted) {
      w->finished->notify_all();
      return;
    }
    if (ec) {
      w->gone = true;
      if (w->wake) w->wake->notify_all();
      w->finished->notify_all();
      return;
    }
    w->pipelined.append(w->buf.data(), n);
    arm_peer_watch(socket, w);
  });
}
}  // namespace

void Exchange::watch_peer(async::Event* wake) {
  // Only once the request body is fully read: before that, body bytes are expected traffic.
  if (!parser_.is_done() || watch_) return;
  watch_ = std::make_shared<PeerWatch>();
  watch_->wake = wake;
  watch_->finished = std::make_unique<async::Event>(socket_.get_executor());
  arm_peer_watch(socket_, watch_);
}

bool Exchange::peer_gone() const { return peer_gone_ || (watch_ && watch_->gone); }

net::awaitable<void> Exchange::stop_watching_peer() {
  if (!watch_) co_return;
  auto w = watch_;
  w->wake = nullptr;
  while (w->pending) {
    boost::system::error_code ignored;
    socket_.cancel(ignored);
    co_await w->finished->wait_until(async::Clock::now() + std::chrono::milliseconds(100));
  }
  peer_gone_ = peer_gone_ || w->gone;
  if (w->gone) close_ = true;
  if (!w->pipelined.empty()) {
    auto dst = buffer_.prepare(w->pipelined.size());
    net::buffer_copy(dst, net::buffer(w->pipelined));
    buffer_.commit(w->pipelined.size());
  }
  watch_.reset();
}

}  // namespace cove::http
