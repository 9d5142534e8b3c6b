// The TLS edge end to end: a listener on 127.0.0.1:0 whose connections go through
// serve_tls_connection (handshake, ALPN, then the HTTP/1.1 bridge or the HTTP/2 gateway) to a test
// handler in an io_context thread. Clients live in the test thread: OpenSSL over a non-blocking
// socket driven by poll() with deadlines, so an edge that buffers or hangs fails a test instead of
// hanging it; they trust only the temporary local CA and check the name, as the SDKs do. The
// HTTP/2 client is a small nghttp2 client session pumped over that connection.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../store/scratch_dir.hpp"
#include "async/event.hpp"
#include "edge/certificates.hpp"
#include "edge/tls_connection.hpp"
#include "edge/tls_context.hpp"
#include "http/server.hpp"
#include "net/listeners.hpp"

namespace cove::shim::edge {
namespace {
namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kServerName = "49983-abc.cove.localhost";
constexpr size_t kBigBody = 5u << 20;  // 5 MiB
constexpr int kManyStreams = 150;

unsigned char pattern(uint64_t i) { return static_cast<unsigned char>((i * 131) ^ (i >> 11)); }

std::string patterned(uint64_t offset, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(pattern(offset + i));
  return s;
}

bool is_pattern(std::string_view data, uint64_t offset = 0) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (static_cast<unsigned char>(data[i]) != pattern(offset + i)) return false;
  }
  return true;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

// ---------------------------------------------------------------------------------------------
// The handler behind the edge, and what it tells the test (shared between threads).

struct HandlerState {
  std::atomic<bool> gate{false};             // /gated holds its second chunk until this is set
  std::atomic<bool> quiet_started{false};
  std::atomic<bool> saw_client_gone{false};  // /quiet noticed its client leaving
  std::atomic<int64_t> gone_at_ns{0};        // when (steady clock)
  std::atomic<int> arrivals{0};              // /many: requests seen, and at most how many at once
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
};

asio::awaitable<void> test_handler(HandlerState& st, http::Exchange& ex) {
  const std::string path(ex.path());
  if (path == "/inspect") {
    // What reached the handler, as HTTP/1.1.
    std::string out = "method=" + std::string(ex.method()) + " target=" + std::string(ex.target()) +
                      " version=" + std::to_string(ex.version()) + " host=" + std::string(ex.header("Host")) +
                      " custom=" + std::string(ex.header("X-Custom")) + " cookie=" + std::string(ex.header("Cookie")) +
                      " te=" + std::string(ex.header("Transfer-Encoding")) +
                      " cl=" + std::string(ex.header("Content-Length"));
    ex.response_headers().set("X-Reply", "Yes");
    co_await ex.respond(200, "text/plain", out);
  } else if (path == "/relayed") {
    // A response carrying HTTP/1.1 connection fields that must not cross into HTTP/2.
    http::Fields f;
    f.set("X-Mixed-Case", "Value");
    f.set("Content-Type", "text/x-test");
    f.set("Keep-Alive", "timeout=5");
    f.set("Connection", "keep-alive, Upgrade");
    f.set("Upgrade", "foo/1");
    f.set("Transfer-Encoding", "chunked");
    if (!co_await ex.begin_relayed(203, f)) co_return;
    co_await ex.write_chunk("relayed ");
    co_await ex.write_chunk("body");
    co_await ex.finish_stream();
  } else if (path == "/echo") {
    // Full duplex: every piece of the request body goes straight back.
    co_await ex.begin_stream(200, "application/octet-stream");
    std::vector<char> buf(100 * 1000);
    for (;;) {
      size_t n = co_await ex.read_body_some(buf.data(), buf.size());
      if (n == 0) break;
      std::string_view piece(buf.data(), n);
      if (!co_await ex.write_chunk(piece)) co_return;
    }
    co_await ex.finish_stream();
  } else if (path == "/count") {
    // Counts and checks the body, and says how it was framed.
    std::vector<char> buf(70 * 1000);
    uint64_t total = 0;
    bool ok = true;
    for (;;) {
      size_t n = co_await ex.read_body_some(buf.data(), buf.size());
      if (n == 0) break;
      ok = ok && is_pattern(std::string_view(buf.data(), n), total);
      total += n;
    }
    std::string out = std::to_string(total) + (ok ? " ok" : " bad") + " cl=" + std::string(ex.header("Content-Length")) +
                      " te=" + std::string(ex.header("Transfer-Encoding"));
    co_await ex.respond(200, "text/plain", out);
  } else if (path == "/gated") {
    co_await ex.begin_stream(200, "application/connect+json");
    co_await ex.write_chunk("one");
    for (int i = 0; i < 1000 && !st.gate; ++i) co_await sleep_for(10ms);
    co_await ex.write_chunk("two");
    co_await ex.finish_stream();
  } else if (path == "/quiet") {
    co_await ex.begin_stream(200, "application/connect+json");
    co_await ex.write_chunk("hello");
    async::Event wake(co_await asio::this_coro::executor);
    ex.watch_peer(&wake);
    st.quiet_started = true;
    for (int i = 0; i < 100 && !ex.peer_gone(); ++i) co_await wake.wait_until(async::Clock::now() + 100ms);
    if (ex.peer_gone()) {
      st.gone_at_ns = Clock::now().time_since_epoch().count();
      st.saw_client_gone = true;
    }
    co_await ex.stop_watching_peer();
  } else if (path == "/hold") {
    // Takes part of its body only once the gate opens, then no more: the gateway is left with
    // body bytes in flight towards a handler that does not read them when the client resets.
    for (int i = 0; i < 1000 && !st.gate; ++i) co_await sleep_for(5ms);
    std::vector<char> buf(64 * 1024);
    for (size_t taken = 0; taken < 256 * 1024;) {
      size_t n = co_await ex.read_body_some(buf.data(), buf.size());
      if (n == 0) break;
      taken += n;
    }
    co_await ex.begin_stream(200, "text/plain");
    co_await ex.write_chunk("held");
    for (int i = 0; i < 1000; ++i) {
      co_await sleep_for(10ms);
      if (!co_await ex.write_chunk(".")) break;
    }
    co_await ex.finish_stream();
  } else if (path == "/throw") {
    co_await ex.begin_stream(200, "text/plain");
    co_await ex.write_chunk("partial");
    co_await sleep_for(50ms);
    throw std::runtime_error("handler failed mid-stream");
  } else if (path == "/head") {
    http::Fields f;
    f.set("Content-Length", "10");
    f.set("Content-Type", "text/plain");
    co_await ex.begin_relayed(200, f);
  } else if (path == "/nocontent") {
    co_await ex.respond(204, "", "");
  } else if (path == "/many") {
    // Holds every request until all have arrived (or 5 s): a gateway that runs fewer at once
    // shows up in max_in_flight.
    ++st.arrivals;
    int now = ++st.in_flight;
    int seen = st.max_in_flight;
    while (now > seen && !st.max_in_flight.compare_exchange_weak(seen, now)) {
    }
    const auto until = Clock::now() + 5s;
    while (st.arrivals < kManyStreams && Clock::now() < until) co_await sleep_for(5ms);
    --st.in_flight;
    std::string out = "many " + std::string(ex.query());
    co_await ex.respond(200, "text/plain", out);
  } else {
    co_await ex.respond(404, "text/plain", "no such test route");
  }
}

// ---------------------------------------------------------------------------------------------
// A TLS client connection: non-blocking socket, OpenSSL, poll() with deadlines.

class TlsClient {
 public:
  TlsClient(uint16_t port, const std::string& ca_file, const std::vector<std::string>& alpn) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      error_ = "connect failed";
      return;
    }
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    ssl_ = SSL_new(ctx_);
    SSL_set_mode(ssl_, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, kServerName);
    SSL_set1_host(ssl_, kServerName);
    if (!alpn.empty()) {
      std::string wire;
      for (const auto& p : alpn) wire.append(1, static_cast<char>(p.size())).append(p);
      SSL_set_alpn_protos(ssl_, reinterpret_cast<const unsigned char*>(wire.data()),
                          static_cast<unsigned>(wire.size()));
    }
    const auto deadline = Clock::now() + 10s;
    for (;;) {
      int rv = SSL_connect(ssl_);
      if (rv == 1) break;
      int err = SSL_get_error(ssl_, rv);
      short events = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
      if (events == 0 || !wait(events, deadline)) {
        char buf[256];
        ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
        error_ = std::string("handshake failed: ") + buf + " verify=" + std::to_string(SSL_get_verify_result(ssl_));
        return;
      }
    }
    connected_ = true;
  }
  ~TlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
    SSL_CTX_free(ctx_);
  }
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  bool connected() const { return connected_; }
  const std::string& error() const { return error_; }
  bool eof() const { return eof_; }
  std::string alpn() const {
    const unsigned char* data = nullptr;
    unsigned len = 0;
    SSL_get0_alpn_selected(ssl_, &data, &len);
    return data ? std::string(reinterpret_cast<const char*>(data), len) : std::string();
  }

  // Queues bytes; they leave as the connection takes them, during run_until.
  void send(std::string_view data) { out_.append(data); }
  size_t unsent() const { return out_.size(); }

  // Gone without a word (no close_notify): what a killed client looks like.
  void drop() {
    SSL_free(ssl_);
    ssl_ = nullptr;
    ::close(fd_);
    fd_ = -1;
  }

  // Moves bytes both ways until `done` holds; `refill` may queue more before each round and
  // `on_read` receives what arrives. False on timeout (or when `done` can no longer change
  // because the connection ended).
  bool run_until(const std::function<bool()>& done, const std::function<void(std::string_view)>& on_read,
                 std::chrono::milliseconds timeout = 30s, const std::function<void()>& refill = {}) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (refill) refill();
      if (done()) return true;
      bool progress = false;
      bool want_write = false;
      // Writing: retried with the same length after WANT_WRITE, as OpenSSL requires.
      while (!out_.empty()) {
        if (inflight_ == 0) inflight_ = std::min<size_t>(out_.size(), 16 * 1024);
        int rv = SSL_write(ssl_, out_.data(), static_cast<int>(inflight_));
        if (rv > 0) {
          out_.erase(0, static_cast<size_t>(rv));
          inflight_ = 0;
          progress = true;
          continue;
        }
        int err = SSL_get_error(ssl_, rv);
        if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
          want_write = true;
          break;
        }
        eof_ = true;
        out_.clear();
        break;
      }
      // Reading: everything there is now.
      for (int rounds = 0; rounds < 64 && !eof_; ++rounds) {
        char buf[16 * 1024];
        int rv = SSL_read(ssl_, buf, sizeof buf);
        if (rv > 0) {
          progress = true;
          on_read(std::string_view(buf, static_cast<size_t>(rv)));
          continue;
        }
        int err = SSL_get_error(ssl_, rv);
        if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) eof_ = true;
        break;
      }
      if (done()) return true;
      if (eof_) return false;
      if (progress) continue;
      if (Clock::now() >= deadline) return false;
      short events = POLLIN | (want_write ? POLLOUT : 0);
      wait(events, std::min(deadline, Clock::now() + 50ms));
    }
  }

 private:
  bool wait(short events, Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left < 0) left = 0;
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, static_cast<int>(left)) > 0;
  }

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string error_;
  std::string out_;
  size_t inflight_ = 0;
};

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 on a TlsClient: an incremental response reader.

struct H1Response {
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
  bool complete = false;
};

class H1Reader {
 public:
  explicit H1Reader(bool head_request = false) : head_request_(head_request) {}
  // Consumes what it can from `in`; body bytes also go to `on_body` when given.
  void feed(std::string& in, const std::function<void(std::string_view)>& on_body = {}) {
    for (;;) {
      if (r.complete) return;
      if (!head_done_) {
        auto end = in.find("\r\n\r\n");
        if (end == std::string::npos) return;
        parse_head(in.substr(0, end));
        in.erase(0, end + 4);
        head_done_ = true;
        if (head_request_ || r.status == 204 || r.status == 304) {
          r.complete = true;
          return;
        }
        continue;
      }
      if (chunked_) {
        if (chunk_left_ == 0) {
          if (after_chunk_) {  // the CRLF that ends a chunk's data
            if (in.size() < 2) return;
            in.erase(0, 2);
            after_chunk_ = false;
            continue;
          }
          auto eol = in.find("\r\n");
          if (eol == std::string::npos) return;
          size_t size = std::stoul(in.substr(0, eol), nullptr, 16);
          if (size == 0) {
            if (in.size() < eol + 4) return;  // "0\r\n\r\n", no trailers in these tests
            in.erase(0, eol + 4);
            r.complete = true;
            return;
          }
          in.erase(0, eol + 2);
          chunk_left_ = size;
        }
        size_t n = std::min(chunk_left_, in.size());
        if (n == 0) return;
        take(in, n, on_body);
        chunk_left_ -= n;
        if (chunk_left_ == 0) after_chunk_ = true;
      } else {
        size_t n = std::min(length_left_, in.size());
        take(in, n, on_body);
        length_left_ -= n;
        if (length_left_ == 0) r.complete = true;
        if (n == 0) return;
      }
    }
  }

  H1Response r;

 private:
  void parse_head(const std::string& head) {
    size_t eol = head.find("\r\n");
    std::string status_line = head.substr(0, eol);
    r.status = static_cast<unsigned>(std::stoul(status_line.substr(9, 3)));
    size_t pos = eol == std::string::npos ? head.size() : eol + 2;
    while (pos < head.size()) {
      size_t next = head.find("\r\n", pos);
      if (next == std::string::npos) next = head.size();
      std::string line = head.substr(pos, next - pos);
      auto colon = line.find(':');
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers[lower(line.substr(0, colon))] = value;
      pos = next + 2;
    }
    chunked_ = lower(r.headers["transfer-encoding"]) == "chunked";
    if (!chunked_) length_left_ = r.headers.count("content-length") ? std::stoull(r.headers["content-length"]) : 0;
  }
  void take(std::string& in, size_t n, const std::function<void(std::string_view)>& on_body) {
    if (on_body) {
      on_body(std::string_view(in.data(), n));
    } else {
      r.body.append(in, 0, n);
    }
    in.erase(0, n);
  }

  bool head_request_;
  bool head_done_ = false;
  bool chunked_ = false;
  bool after_chunk_ = false;
  size_t chunk_left_ = 0;
  uint64_t length_left_ = 0;
};

std::string h1_request(const std::string& method, const std::string& target, const std::string& extra = "") {
  return method + " " + target + " HTTP/1.1\r\nHost: " + kServerName + "\r\n" + extra + "\r\n";
}

// Reads one whole response (or until `stop` holds) off the client.
H1Response read_h1(TlsClient& c, std::string& in, H1Reader& reader,
                   const std::function<void(std::string_view)>& on_body = {},
                   const std::function<bool()>& stop = {}) {
  c.run_until([&] { return reader.r.complete || (stop && stop()); },
              [&](std::string_view data) {
                in.append(data);
                reader.feed(in, on_body);
              });
  return reader.r;
}

H1Response read_h1(TlsClient& c, std::string& in, bool head_request = false) {
  H1Reader reader(head_request);
  reader.feed(in);
  return read_h1(c, in, reader);
}

// ---------------------------------------------------------------------------------------------
// HTTP/2 on a TlsClient: a small nghttp2 client session.

struct H2Stream {
  int32_t id = 0;
  std::string status;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int data_frames = 0;
  bool closed = false;
  uint32_t error_code = 0;
  int close_order = -1;
  // Request body: `upload_size` patterned bytes, made as they are sent.
  size_t upload_size = 0;
  size_t upload_offset = 0;
  bool has_body = false;

  std::string header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return {};
  }
  bool has_header(const std::string& name) const {
    return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; });
  }
};

class H2Client {
 public:
  H2Client(uint16_t port, const std::string& ca_file) : tls_(port, ca_file, {"h2", "http/1.1"}) {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_client_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000},
                                               {NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 2);
  }
  ~H2Client() { nghttp2_session_del(session_); }

  TlsClient& tls() { return tls_; }

  // A request; `body_size` patterned bytes follow when `with_body` (and content-length says so
  // when `content_length`).
  H2Stream& submit(const std::string& method, const std::string& path,
                   std::vector<std::pair<std::string, std::string>> extra = {}, bool with_body = false,
                   size_t body_size = 0, bool content_length = false) {
    auto stream = std::make_unique<H2Stream>();
    stream->has_body = with_body;
    stream->upload_size = body_size;
    std::vector<std::pair<std::string, std::string>> fields = {{":method", method}};
    if (method == "CONNECT") {
      fields.emplace_back(":authority", "example.com:443");
    } else {
      fields.emplace_back(":scheme", "https");
      fields.emplace_back(":authority", kServerName);
      fields.emplace_back(":path", path);
    }
    if (content_length) fields.emplace_back("content-length", std::to_string(body_size));
    for (auto& f : extra) fields.push_back(std::move(f));
    std::vector<nghttp2_nv> nv;
    for (const auto& [n, v] : fields) {
      nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
    }
    nghttp2_data_provider provider{};
    provider.source.ptr = stream.get();
    provider.read_callback = read_upload;
    int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), with_body ? &provider : nullptr,
                                        stream.get());
    EXPECT_GT(id, 0) << nghttp2_strerror(id);
    stream->id = id;
    streams_.push_back(std::move(stream));
    return *streams_.back();
  }

  void reset(const H2Stream& stream) { nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream.id, NGHTTP2_CANCEL); }

  // Pumps the session until `done` holds. False on timeout or a connection that ended.
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 30s) {
    return tls_.run_until(
        done,
        [this](std::string_view data) {
          ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(data.data()), data.size());
          if (rv < 0) {
            ADD_FAILURE() << "nghttp2_session_mem_recv: " << nghttp2_strerror(static_cast<int>(rv));
            failed_ = true;
          }
        },
        timeout, [this] { fill(); });
  }
  bool all_closed() const {
    return std::all_of(streams_.begin(), streams_.end(), [](const auto& s) { return s->closed; });
  }
  bool goaway() const { return goaway_; }
  bool failed() const { return failed_; }
  // Nothing queued in nghttp2 nor in the TLS client.
  bool flushed() const { return nghttp2_session_want_write(session_) == 0 && tls_.unsent() == 0; }

 private:
  void fill() {
    while (tls_.unsent() < 256 * 1024) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        ADD_FAILURE() << "nghttp2_session_mem_send: " << nghttp2_strerror(static_cast<int>(n));
        failed_ = true;
        return;
      }
      if (n == 0) return;
      tls_.send(std::string_view(reinterpret_cast<const char*>(data), static_cast<size_t>(n)));
    }
  }

  static H2Stream* stream_of(nghttp2_session* session, int32_t id) {
    return static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(session, id));
  }
  static int on_header(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                       const uint8_t* value, size_t valuelen, uint8_t, void*) {
    H2Stream* s = stream_of(session, frame->hd.stream_id);
    if (s == nullptr || frame->hd.type != NGHTTP2_HEADERS) return 0;
    std::string n(reinterpret_cast<const char*>(name), namelen);
    std::string v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":status") {
      s->status = v;
    } else {
      s->headers.emplace_back(std::move(n), std::move(v));
    }
    return 0;
  }
  static int on_data_chunk(nghttp2_session* session, uint8_t, int32_t id, const uint8_t* data, size_t len, void*) {
    H2Stream* s = stream_of(session, id);
    if (s != nullptr) s->body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }
  static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* self) {
    if (frame->hd.type == NGHTTP2_GOAWAY) static_cast<H2Client*>(self)->goaway_ = true;
    if (frame->hd.type != NGHTTP2_DATA) return 0;
    H2Stream* s = stream_of(session, frame->hd.stream_id);
    if (s != nullptr) ++s->data_frames;
    return 0;
  }
  static int on_stream_close(nghttp2_session* session, int32_t id, uint32_t error_code, void* self) {
    H2Stream* s = stream_of(session, id);
    if (s == nullptr) return 0;
    s->closed = true;
    s->error_code = error_code;
    s->close_order = static_cast<H2Client*>(self)->closes_++;
    return 0;
  }
  static ssize_t read_upload(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                             nghttp2_data_source* source, void*) {
    auto* s = static_cast<H2Stream*>(source->ptr);
    size_t n = std::min(length, s->upload_size - s->upload_offset);
    for (size_t i = 0; i < n; ++i) buf[i] = pattern(s->upload_offset + i);
    s->upload_offset += n;
    if (s->upload_offset == s->upload_size) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  TlsClient tls_;
  nghttp2_session* session_ = nullptr;
  std::vector<std::unique_ptr<H2Stream>> streams_;
  int closes_ = 0;
  bool goaway_ = false;
  bool failed_ = false;
};

// ---------------------------------------------------------------------------------------------

class TlsEdgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = ensure_local_certificates(dir_.path(), "cove.localhost");
    ca_file_ = dir_ / "ca.pem";
    context_ = make_tls_context(files_, true);
    handler_ = [this](http::Exchange& ex) { return test_handler(state_, ex); };

    acceptor_.emplace(ctx_);
    const asio::generic::stream_protocol::endpoint endpoint(
        asio::ip::tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), 0));
    acceptor_->open(endpoint.protocol());
    acceptor_->bind(endpoint);
    acceptor_->listen();
    port_ = netio::local_tcp_port(*acceptor_);
    asio::co_spawn(ctx_, netio::accept_loop(*acceptor_, [this](http::Socket socket) {
                     auto ex = socket.get_executor();
                     asio::co_spawn(ex, serve_tls_connection(std::move(socket), context_, handler_), asio::detached);
                   }),
                   asio::detached);
    io_ = std::thread([this] { ctx_.run(); });
  }
  void TearDown() override {
    work_.reset();
    ctx_.stop();
    io_.join();
  }

  std::unique_ptr<TlsClient> h1_client(std::vector<std::string> alpn = {"http/1.1"}) {
    auto c = std::make_unique<TlsClient>(port_, ca_file_, alpn);
    EXPECT_TRUE(c->connected()) << c->error();
    return c;
  }
  std::unique_ptr<H2Client> h2_client() {
    auto c = std::make_unique<H2Client>(port_, ca_file_);
    EXPECT_TRUE(c->tls().connected()) << c->tls().error();
    EXPECT_EQ(c->tls().alpn(), "h2");
    return c;
  }
  // The /quiet handler watches its peer (up to 5 s).
  bool wait_quiet_started() {
    const auto until = Clock::now() + 5s;
    while (!state_.quiet_started && Clock::now() < until) std::this_thread::sleep_for(1ms);
    return state_.quiet_started;
  }
  // Waits (up to 5 s) for the handler to notice its client leaving; returns how long after `since`.
  std::chrono::milliseconds wait_client_gone(Clock::time_point since) {
    while (!state_.saw_client_gone && Clock::now() - since < 5s) std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(state_.saw_client_gone) << "the handler never saw peer_gone()";
    if (!state_.saw_client_gone) return std::chrono::milliseconds(5000);
    Clock::time_point at{Clock::duration(state_.gone_at_ns.load())};
    return std::chrono::duration_cast<std::chrono::milliseconds>(at - since);
  }

  // Declared before the io_context: its pending coroutines reference them when it is destroyed.
  test::ScratchDir dir_;
  TlsFiles files_;
  std::string ca_file_;
  std::shared_ptr<asio::ssl::context> context_;
  HandlerState state_;
  http::Handler handler_;
  asio::io_context ctx_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(ctx_);
  std::optional<netio::Acceptor> acceptor_;
  uint16_t port_ = 0;
  std::thread io_;
};

// ---- HTTP/1.1 over TLS -----------------------------------------------------------------------

TEST_F(TlsEdgeTest, Http1KeepAliveServesTwoRequestsOnOneConnection) {
  auto c = h1_client();
  EXPECT_EQ(c->alpn(), "http/1.1");
  std::string in;
  c->send(h1_request("GET", "/inspect?n=1", "X-Custom: first\r\n"));
  H1Response a = read_h1(*c, in);
  c->send(h1_request("GET", "/inspect?n=2", "X-Custom: second\r\n"));
  H1Response b = read_h1(*c, in);
  ASSERT_TRUE(a.complete);
  ASSERT_TRUE(b.complete);
  EXPECT_EQ(a.status, 200u);
  EXPECT_EQ(a.body, std::string("method=GET target=/inspect?n=1 version=11 host=") + kServerName +
                        " custom=first cookie= te= cl=");
  EXPECT_EQ(a.headers["x-reply"], "Yes");
  EXPECT_EQ(a.headers.count("connection"), 0u);  // kept alive
  EXPECT_EQ(b.body, std::string("method=GET target=/inspect?n=2 version=11 host=") + kServerName +
                        " custom=second cookie= te= cl=");
  EXPECT_FALSE(c->eof());
}

TEST_F(TlsEdgeTest, Http1WithoutAlpnIsServedAsHttp1) {
  auto c = h1_client({});
  EXPECT_EQ(c->alpn(), "");
  std::string in;
  c->send(h1_request("GET", "/inspect"));
  H1Response r = read_h1(*c, in);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 200u);
}

TEST_F(TlsEdgeTest, Http1ChunkedUploadIsEchoedPieceByPiece) {
  auto c = h1_client();
  c->send(h1_request("POST", "/echo", "Transfer-Encoding: chunked\r\n"));
  size_t sent = 0;
  bool terminated = false;
  uint64_t received = 0;
  bool intact = true;
  std::string in;
  H1Reader reader;
  // Pieces go out while the echo comes back: neither side may wait for the whole body.
  c->run_until([&] { return reader.r.complete; },
               [&](std::string_view data) {
                 in.append(data);
                 reader.feed(in, [&](std::string_view p) {
                   intact = intact && is_pattern(p, received);
                   received += p.size();
                 });
               },
               60s,
               [&] {
                 if (c->unsent() > 256 * 1024 || terminated) return;
                 if (sent == kBigBody) {
                   c->send("0\r\n\r\n");
                   terminated = true;
                   return;
                 }
                 size_t n = std::min<size_t>(100 * 1000, kBigBody - sent);
                 char head[32];
                 int h = snprintf(head, sizeof head, "%zx\r\n", n);
                 c->send(std::string_view(head, static_cast<size_t>(h)));
                 c->send(patterned(sent, n));
                 c->send("\r\n");
                 sent += n;
               });
  EXPECT_TRUE(reader.r.complete);
  EXPECT_EQ(reader.r.status, 200u);
  EXPECT_EQ(reader.r.headers["transfer-encoding"], "chunked");
  EXPECT_EQ(received, kBigBody);
  EXPECT_TRUE(intact);
}

TEST_F(TlsEdgeTest, Http1StreamedChunkArrivesBeforeTheHandlerFinishes) {
  auto c = h1_client();
  c->send(h1_request("GET", "/gated"));
  std::string in, seen;
  H1Reader reader;
  auto collect = [&](std::string_view p) { seen += p; };
  // The handler holds its second chunk until the gate opens (up to 10 s): a bridge that buffered
  // would leave the client with nothing here.
  read_h1(*c, in, reader, collect, [&] { return seen == "one"; });
  EXPECT_EQ(seen, "one");
  EXPECT_FALSE(reader.r.complete);
  state_.gate = true;
  read_h1(*c, in, reader, collect);
  EXPECT_TRUE(reader.r.complete);
  EXPECT_EQ(seen, "onetwo");
}

TEST_F(TlsEdgeTest, Http1ClientLeavingMidStreamIsSeenByTheHandler) {
  auto c = h1_client();
  c->send(h1_request("GET", "/quiet"));
  std::string in, seen;
  H1Reader reader;
  read_h1(*c, in, reader, [&](std::string_view p) { seen += p; }, [&] { return seen == "hello"; });
  ASSERT_EQ(seen, "hello");
  ASSERT_TRUE(wait_quiet_started());
  auto t0 = Clock::now();
  c->drop();
  EXPECT_LT(wait_client_gone(t0), 2s);
}

// ---- HTTP/2 ----------------------------------------------------------------------------------

TEST_F(TlsEdgeTest, Http2GetArrivesAsHttp1WithHostFromAuthority) {
  auto c = h2_client();
  H2Stream& s = c->submit("GET", "/inspect?q=1", {{"x-custom", "v1"}, {"cookie", "a=1"}, {"cookie", "b=2"}});
  ASSERT_TRUE(c->run_until([&] { return s.closed; }));
  EXPECT_EQ(s.error_code, 0u);
  EXPECT_EQ(s.status, "200");
  EXPECT_EQ(s.body, std::string("method=GET target=/inspect?q=1 version=11 host=") + kServerName +
                        " custom=v1 cookie=a=1; b=2 te= cl=");
  EXPECT_EQ(s.header("x-reply"), "Yes");
  EXPECT_EQ(s.header("content-type"), "text/plain");
  EXPECT_EQ(s.header("content-length"), std::to_string(s.body.size()));
  EXPECT_FALSE(s.has_header("connection"));
}

TEST_F(TlsEdgeTest, Http2ResponseDropsConnectionFieldsAndLowercasesNames) {
  auto c = h2_client();
  H2Stream& s = c->submit("GET", "/relayed");
  ASSERT_TRUE(c->run_until([&] { return s.closed; }));
  EXPECT_EQ(s.error_code, 0u);
  EXPECT_EQ(s.status, "203");
  EXPECT_EQ(s.body, "relayed body");
  EXPECT_EQ(s.header("x-mixed-case"), "Value");
  EXPECT_EQ(s.header("content-type"), "text/x-test");
  for (const char* hop : {"connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te"}) {
    EXPECT_FALSE(s.has_header(hop)) << hop;
  }
  for (const auto& [name, value] : s.headers) EXPECT_EQ(name, lower(name));
  EXPECT_FALSE(c->goaway());
}

TEST_F(TlsEdgeTest, Http2SlowStreamDoesNotHoldBackAFastOne) {
  auto c = h2_client();
  H2Stream& slow = c->submit("GET", "/gated");
  H2Stream& fast = c->submit("GET", "/inspect");
  // /gated waits for the gate, which opens only after the fast stream is done.
  ASSERT_TRUE(c->run_until([&] { return fast.closed && slow.body == "one"; }, 10s))
      << "fast closed=" << fast.closed << " slow body=" << slow.body;
  EXPECT_FALSE(slow.closed);
  EXPECT_EQ(fast.status, "200");
  EXPECT_EQ(fast.error_code, 0u);
  state_.gate = true;
  ASSERT_TRUE(c->run_until([&] { return slow.closed; }));
  EXPECT_EQ(slow.error_code, 0u);
  EXPECT_EQ(slow.body, "onetwo");
  EXPECT_LT(fast.close_order, slow.close_order);
}

TEST_F(TlsEdgeTest, Http2UploadWithoutContentLengthIsChunkedAndEchoed) {
  auto c = h2_client();
  H2Stream& s = c->submit("POST", "/echo", {}, true, kBigBody, false);
  ASSERT_TRUE(c->run_until([&] { return s.closed; }, 60s)) << "echoed " << s.body.size();
  EXPECT_EQ(s.error_code, 0u);
  EXPECT_EQ(s.status, "200");
  EXPECT_EQ(s.body.size(), kBigBody);
  EXPECT_TRUE(is_pattern(s.body));
}

TEST_F(TlsEdgeTest, Http2UploadIsCountedExactlyWithAndWithoutContentLength) {
  auto c = h2_client();
  H2Stream& sized = c->submit("POST", "/count", {}, true, kBigBody, true);
  ASSERT_TRUE(c->run_until([&] { return sized.closed; }, 60s));
  EXPECT_EQ(sized.error_code, 0u);
  EXPECT_EQ(sized.body, std::to_string(kBigBody) + " ok cl=" + std::to_string(kBigBody) + " te=");
  H2Stream& unsized = c->submit("POST", "/count", {}, true, kBigBody, false);
  ASSERT_TRUE(c->run_until([&] { return unsized.closed; }, 60s));
  EXPECT_EQ(unsized.error_code, 0u);
  EXPECT_EQ(unsized.body, std::to_string(kBigBody) + " ok cl= te=chunked");
  // An empty body with END_STREAM on the HEADERS frame.
  H2Stream& empty = c->submit("POST", "/count");
  ASSERT_TRUE(c->run_until([&] { return empty.closed; }));
  EXPECT_EQ(empty.body, "0 ok cl= te=");
}

TEST_F(TlsEdgeTest, Http2HeadAndNoContentCarryNoData) {
  auto c = h2_client();
  H2Stream& head = c->submit("HEAD", "/head");
  H2Stream& none = c->submit("GET", "/nocontent");
  ASSERT_TRUE(c->run_until([&] { return head.closed && none.closed; }));
  EXPECT_EQ(head.status, "200");
  EXPECT_EQ(head.header("content-length"), "10");
  EXPECT_EQ(head.data_frames, 0);
  EXPECT_EQ(head.error_code, 0u);
  EXPECT_EQ(none.status, "204");
  EXPECT_EQ(none.data_frames, 0);
  EXPECT_EQ(none.error_code, 0u);
  EXPECT_TRUE(none.body.empty());
}

TEST_F(TlsEdgeTest, Http2HandlerFailingMidStreamResetsTheStream) {
  auto c = h2_client();
  H2Stream& s = c->submit("GET", "/throw");
  ASSERT_TRUE(c->run_until([&] { return s.closed; }));
  EXPECT_EQ(s.status, "200");
  EXPECT_EQ(s.body, "partial");
  EXPECT_NE(s.error_code, 0u) << "a cut response must not end like a complete one";
  // The connection itself carries on.
  H2Stream& next = c->submit("GET", "/inspect");
  ASSERT_TRUE(c->run_until([&] { return next.closed; }));
  EXPECT_EQ(next.status, "200");
}

TEST_F(TlsEdgeTest, Http2ResetByTheClientIsSeenByTheHandler) {
  auto c = h2_client();
  H2Stream& s = c->submit("GET", "/quiet");
  ASSERT_TRUE(c->run_until([&] { return s.body == "hello"; }));
  ASSERT_TRUE(wait_quiet_started());
  auto t0 = Clock::now();
  c->reset(s);
  ASSERT_TRUE(c->run_until([&] { return c->flushed(); }));
  EXPECT_LT(wait_client_gone(t0), 2s);
  // The connection itself carries on.
  H2Stream& next = c->submit("GET", "/inspect");
  ASSERT_TRUE(c->run_until([&] { return next.closed; }));
  EXPECT_EQ(next.status, "200");
}

TEST_F(TlsEdgeTest, Http2ResetUploadsGiveTheirWindowBack) {
  // Each stream leaves request bytes unread by its handler when the client resets it; the
  // gateway must return them to the connection window (16 MiB), or the connection starves.
  constexpr size_t kHeld = 1u << 20;  // the stream window: all of it may be in flight
  constexpr int kRounds = 40;
  auto c = h2_client();
  for (int i = 0; i < kRounds; ++i) {
    state_.gate = false;
    H2Stream& s = c->submit("POST", "/hold", {}, true, kHeld, false);
    ASSERT_TRUE(c->run_until([&] { return s.upload_offset == kHeld && c->flushed(); }, 10s))
        << "round " << i << ": sent " << s.upload_offset;
    c->run_until([] { return false; }, 30ms);  // let the gateway take it in
    state_.gate = true;
    ASSERT_TRUE(c->run_until([&] { return s.body.starts_with("held"); }, 10s)) << "round " << i;
    c->run_until([] { return false; }, 30ms);
    c->reset(s);
    ASSERT_TRUE(c->run_until([&] { return c->flushed() && s.closed; }, 10s)) << "round " << i;
  }
  H2Stream& last = c->submit("POST", "/count", {}, true, 2u << 20, true);
  ASSERT_TRUE(c->run_until([&] { return last.closed; }, 10s)) << "sent " << last.upload_offset;
  EXPECT_EQ(last.body, "2097152 ok cl=2097152 te=");
}

TEST_F(TlsEdgeTest, Http2ConnectIsRefusedWith405) {
  auto c = h2_client();
  H2Stream& s = c->submit("CONNECT", "");
  ASSERT_TRUE(c->run_until([&] { return s.closed; }));
  EXPECT_EQ(s.status, "405");
}

TEST_F(TlsEdgeTest, Http2ManyConcurrentStreamsAllComplete) {
  auto c = h2_client();
  std::vector<H2Stream*> streams;
  for (int i = 0; i < kManyStreams; ++i) streams.push_back(&c->submit("GET", "/many?i=" + std::to_string(i)));
  ASSERT_TRUE(c->run_until([&] { return c->all_closed(); }, 30s));
  for (int i = 0; i < kManyStreams; ++i) {
    EXPECT_EQ(streams[i]->status, "200") << i;
    EXPECT_EQ(streams[i]->error_code, 0u) << i;
    EXPECT_EQ(streams[i]->body, "many i=" + std::to_string(i));
  }
  EXPECT_EQ(state_.arrivals, kManyStreams);
  EXPECT_EQ(state_.max_in_flight, kManyStreams) << "the streams did not all run at once";
}

// A client that connects and never sends a ClientHello is dropped after the handshake timeout
// (10 s in tls_connection.cpp): too slow for a unit test, so it is not tested here.

}  // namespace
}  // namespace cove::shim::edge
