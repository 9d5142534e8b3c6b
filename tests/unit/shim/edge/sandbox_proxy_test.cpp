// The proxy end to end: a client on one end of a socket pair, the proxy's connection loop on the
// other, and a fake Lifecycle whose open_port hands out socket pairs to a small upstream HTTP
// server (common/http) running in the same io_context. The client side is plain blocking POSIX
// with poll() timeouts, so a proxy that buffers or hangs fails the test instead of hanging it.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <thread>

#include "edge/sandbox_proxy.hpp"
#include "http/server.hpp"

namespace cove::shim::edge {
namespace {
namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using namespace std::chrono_literals;

constexpr std::string_view kEnvd = "49983";

unsigned char pattern(uint64_t i) { return static_cast<unsigned char>((i * 131) ^ (i >> 11)); }

std::pair<int, int> socket_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) throw std::runtime_error("socketpair");
  return {fds[0], fds[1]};
}

http::Socket adopt(net::io_context& ctx, int fd) {
  http::Socket s(ctx);
  s.assign(net::generic::stream_protocol(AF_UNIX, 0), fd);
  return s;
}

net::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  net::steady_timer t(co_await net::this_coro::executor, d);
  co_await t.async_wait(net::use_awaitable);
}

// What the upstream (the "sandbox") saw and is told; shared between threads.
struct UpstreamControl {
  std::atomic<bool> gate{false};           // /stream waits for it before its second chunk
  std::atomic<bool> saw_client_gone{false};
  std::atomic<int> connections{0};
};

// The server inside the fake sandbox.
net::awaitable<void> upstream_handler(UpstreamControl& ctl, http::Exchange& ex) {
  std::string path(ex.path());
  if (path == "/whoami" || path == "/init") {
    std::string out = "id=" + std::string(ex.header("E2b-Sandbox-Id")) + " port=" +
                      std::string(ex.header("E2b-Sandbox-Port")) + " path=" + path +
                      " host=" + std::string(ex.header("Host")) + " connection=" + std::string(ex.header("Connection")) +
                      " xdrop=" + (ex.has_header("X-Drop") ? "yes" : "no") +
                      " keepalive=" + (ex.has_header("Keep-Alive") ? "yes" : "no") +
                      " custom=" + std::string(ex.header("X-Custom"));
    ex.response_headers().set("X-Upstream", "1");
    co_await ex.respond(200, "text/plain", out);
  } else if (path == "/stream") {
    co_await ex.begin_stream(200, "application/connect+json");
    co_await ex.write_chunk("one");
    for (int i = 0; i < 1000 && !ctl.gate; ++i) co_await sleep_for(10ms);
    co_await ex.write_chunk("two");
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
    // Sized upload: counts and checks the pattern without keeping it.
    std::vector<char> buf(70 * 1000);
    uint64_t total = 0;
    bool ok = true;
    for (;;) {
      size_t n = co_await ex.read_body_some(buf.data(), buf.size());
      if (n == 0) break;
      for (size_t i = 0; i < n; ++i) ok = ok && static_cast<unsigned char>(buf[i]) == pattern(total + i);
      total += n;
    }
    co_await ex.respond(200, "text/plain", std::to_string(total) + (ok ? " ok" : " bad"));
  } else if (path == "/download") {
    uint64_t n = std::stoull(*ex.query_param("n"));
    co_await ex.begin_sized(200, "application/octet-stream", n);
    std::vector<char> buf(50 * 1000);
    for (uint64_t off = 0; off < n;) {
      size_t k = std::min<uint64_t>(buf.size(), n - off);
      for (size_t i = 0; i < k; ++i) buf[i] = static_cast<char>(pattern(off + i));
      std::string_view piece(buf.data(), k);
      if (!co_await ex.write_body(piece)) co_return;
      off += k;
    }
  } else if (path == "/cut") {
    co_await ex.begin_stream(200, "application/connect+json");
    co_await ex.write_chunk("partial");
    co_await sleep_for(50ms);
    throw std::runtime_error("sandbox killed");  // the server loop drops the connection
  } else if (path == "/quiet") {
    co_await ex.begin_stream(200, "application/connect+json");
    co_await ex.write_chunk("hello");
    async::Event wake(co_await net::this_coro::executor);
    ex.watch_peer(&wake);
    for (int i = 0; i < 100 && !ex.peer_gone(); ++i) co_await wake.wait_until(async::Clock::now() + 100ms);
    ctl.saw_client_gone = ex.peer_gone();
    co_await ex.stop_watching_peer();
  } else if (path == "/head") {
    http::Fields f;
    f.set("Content-Length", "10");
    f.set("Content-Type", "text/plain");
    co_await ex.begin_relayed(200, f);
  } else if (path == "/nocontent") {
    co_await ex.respond(204, "", "");
  } else if (path == "/eof") {
    // A body that ends with the connection (no length, no chunking).
    http::Fields f;
    f.set("Content-Type", "text/plain");
    ex.close_after();
    co_await ex.begin_relayed(200, f);
    co_await ex.write_body("until the end");
  } else if (path == "/ws") {
    // A protocol switch: after the 101 every byte comes back, upper-cased.
    http::Fields f;
    f.set("Upgrade", std::string(ex.header("Upgrade")));
    f.set("Connection", "Upgrade");
    f.set("Sec-WebSocket-Accept", "test-accept");
    if (!co_await ex.begin_switched(f)) co_return;
    std::string early = ex.take_buffered();
    auto& sock = ex.socket();
    boost::system::error_code ec;
    for (;;) {
      std::string data = std::move(early);
      early.clear();
      if (data.empty()) {
        std::array<char, 4096> buf;
        size_t n = co_await sock.async_read_some(net::buffer(buf), net::redirect_error(net::use_awaitable, ec));
        if (ec) break;
        data.assign(buf.data(), n);
      }
      for (auto& c : data) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      co_await net::async_write(sock, net::buffer(data), net::redirect_error(net::use_awaitable, ec));
      if (ec) break;
    }
  } else if (path == "/cors") {
    ex.response_headers().set("Access-Control-Allow-Origin", "https://only.example");
    co_await ex.respond(200, "text/plain", "own cors");
  } else {
    co_await ex.respond(404, "text/plain", "no such test route");
  }
}

class FakeLease : public PortLease {
 public:
  explicit FakeLease(http::Socket s) : socket_(std::move(s)) {}
  Socket& socket() override { return socket_; }

 private:
  Socket socket_;
};

class FakeLifecycle : public Lifecycle {
 public:
  FakeLifecycle(net::io_context& ctx, UpstreamControl& ctl) : ctx_(ctx), ctl_(ctl) {
    handler_ = [this](http::Exchange& ex) { return upstream_handler(ctl_, ex); };
  }

  std::map<std::string, std::string> traffic_tokens;  // sandboxes that exist, with their token
  uint16_t refused_port = 0;                          // open_port refuses this port
  std::string close_before_head_id;                   // this sandbox's server hangs up at once

  net::awaitable<std::unique_ptr<PortLease>> open_port(std::string id, uint16_t port) override {
    if (!traffic_tokens.count(id)) co_return nullptr;
    if (port == refused_port) throw boost::system::system_error(net::error::connection_refused);
    auto [mine, theirs] = socket_pair();
    ++ctl_.connections;
    if (id == close_before_head_id) {
      ::close(theirs);
    } else {
      net::co_spawn(ctx_, http::serve_connection(adopt(ctx_, theirs), {}, handler_), net::detached);
    }
    co_return std::make_unique<FakeLease>(adopt(ctx_, mine));
  }
  std::optional<std::string> envd_token(const std::string& id) override {
    if (!traffic_tokens.count(id)) return std::nullopt;
    return std::string();
  }
  std::optional<std::string> traffic_token(const std::string& id) override {
    auto it = traffic_tokens.find(id);
    if (it == traffic_tokens.end()) return std::nullopt;
    return it->second;
  }

  // The control plane is not used by the proxy.
  net::awaitable<SandboxView> create(std::string, CreateRequest) override { throw std::logic_error("unused"); }
  net::awaitable<std::pair<SandboxView, bool>> connect(std::string, std::string, std::optional<int64_t>,
                                                       bool) override {
    throw std::logic_error("unused");
  }
  net::awaitable<void> pause(std::string, std::string, bool) override { throw std::logic_error("unused"); }
  net::awaitable<Snapshot> create_snapshot(std::string, std::string, std::string) override {
    throw std::logic_error("unused");
  }
  net::awaitable<std::vector<Snapshot>> list_snapshots(std::string, std::string, std::string) override {
    throw std::logic_error("unused");
  }
  net::awaitable<bool> delete_snapshot(std::string, std::string) override { throw std::logic_error("unused"); }
  net::awaitable<std::vector<ForkOutcome>> fork(std::string, std::string, int, std::optional<int64_t>) override {
    throw std::logic_error("unused");
  }
  net::awaitable<SandboxView> get(std::string, std::string) override { throw std::logic_error("unused"); }
  net::awaitable<ListPage> list(std::string, ListRequest) override { throw std::logic_error("unused"); }
  net::awaitable<bool> kill(std::string, std::string) override { throw std::logic_error("unused"); }
  net::awaitable<void> set_timeout(std::string, std::string, int64_t) override { throw std::logic_error("unused"); }
  net::awaitable<void> refresh(std::string, std::string, int64_t) override { throw std::logic_error("unused"); }
  net::awaitable<std::vector<MetricSample>> metrics(std::string, std::string, std::optional<TimePoint>,
                                                    std::optional<TimePoint>) override {
    throw std::logic_error("unused");
  }
  net::awaitable<std::map<std::string, MetricSample>> latest_metrics(std::string, std::vector<std::string>) override {
    throw std::logic_error("unused");
  }
  std::vector<Template> templates() override { return {}; }
  std::optional<Template> template_by_alias(const std::string&) override { return std::nullopt; }
  std::optional<std::string> team_for_api_key(const std::string&) override { return std::nullopt; }
  std::optional<Team> team_for_access_token(const std::string&) override { return std::nullopt; }

 private:
  net::io_context& ctx_;
  UpstreamControl& ctl_;
  http::Handler handler_;
};

// A blocking HTTP client over a raw fd, every wait bounded.
class Client {
 public:
  explicit Client(int fd) : fd_(fd) {}
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  void send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  void close() {
    ::close(fd_);
    fd_ = -1;
  }
  // false on timeout or EOF (eof() tells which).
  bool recv_more(std::chrono::milliseconds timeout = 5000ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }
  bool eof() const { return eof_; }
  std::string& pending() { return pending_; }

 private:
  int fd_;
  std::string pending_;
  bool eof_ = false;
};

struct Response {
  unsigned status = 0;
  http::Fields headers;
  std::string body;
  bool complete = false;
};

// Parses one response from the client's bytes, resumable: `on_body` sees each piece of body as
// it is parsed (by default it goes to `body`); `until` stops early (checked after each step).
class Reader {
 public:
  explicit Reader(bool head = false) {
    p_.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (head) p_.skip(true);
  }
  Response& read(Client& c, std::function<void(std::string_view)> on_body = {},
                 std::function<bool(const Response&)> until = {}) {
    std::vector<char> scratch(1 << 16);
    for (;;) {
      boost::system::error_code ec;
      p_.get().body().data = scratch.data();
      p_.get().body().size = scratch.size();
      size_t used = c.pending().empty() ? 0 : p_.put(net::buffer(c.pending()), ec);
      c.pending().erase(0, used);
      size_t got = scratch.size() - p_.get().body().size;
      if (p_.is_header_done() && r_.status == 0) {
        r_.status = p_.get().result_int();
        r_.headers = p_.get().base();
      }
      if (got > 0) {
        std::string_view piece(scratch.data(), got);
        if (on_body) {
          on_body(piece);
        } else {
          r_.body.append(piece);
        }
      }
      if (p_.is_done()) {
        r_.complete = true;
        return r_;
      }
      if (until && until(r_)) return r_;
      if (ec == bhttp::error::need_buffer || (used > 0 && !ec)) continue;
      if (ec && ec != bhttp::error::need_more) return r_;  // malformed
      if (!c.recv_more()) {
        if (c.eof() && p_.is_header_done()) {
          p_.put_eof(ec);
          r_.complete = !ec && p_.is_done();
        }
        return r_;
      }
    }
  }

 private:
  bhttp::response_parser<bhttp::buffer_body> p_;
  Response r_;
};

Response read_response(Client& c, bool head = false, std::function<void(std::string_view)> on_body = {},
                       std::function<bool(const Response&)> until = {}) {
  Reader reader(head);
  return reader.read(c, std::move(on_body), std::move(until));
}

std::string request(std::string_view method, std::string_view target, std::string_view id,
                    std::string_view port, std::string extra = "") {
  std::string out = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: localhost:3001\r\n";
  if (!id.empty()) out += "E2b-Sandbox-Id: " + std::string(id) + "\r\n";
  if (!port.empty()) out += "E2b-Sandbox-Port: " + std::string(port) + "\r\n";
  return out + extra + "\r\n";
}

class SandboxProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lifecycle_ = std::make_unique<FakeLifecycle>(ctx_, ctl_);
    lifecycle_->traffic_tokens = {{"aaa", ""}, {"bbb", ""}, {"sec", "tok-123"}};
    lifecycle_->refused_port = 7000;
    lifecycle_->close_before_head_id = "hangup";
    lifecycle_->traffic_tokens["hangup"] = "";
    handler_ = make_sandbox_proxy(*lifecycle_, ProxyOptions{});
    io_ = std::thread([this] { ctx_.run(); });
  }
  void TearDown() override {
    work_.reset();
    ctx_.stop();
    io_.join();
  }
  // A new client connection to the proxy.
  std::unique_ptr<Client> connect() {
    auto [mine, theirs] = socket_pair();
    net::post(ctx_, [this, fd = theirs] {
      net::co_spawn(ctx_, http::serve_connection(adopt(ctx_, fd), {}, handler_), net::detached);
    });
    return std::make_unique<Client>(mine);
  }

  net::io_context ctx_;
  net::executor_work_guard<net::io_context::executor_type> work_ = net::make_work_guard(ctx_);
  UpstreamControl ctl_;
  std::unique_ptr<FakeLifecycle> lifecycle_;
  http::Handler handler_;
  std::thread io_;
};

TEST_F(SandboxProxyTest, RoutingErrorsArePlainText400) {
  struct Case {
    std::string id, port, body;
  };
  for (const Case& c : {Case{"aaa", "", "missing header\n"}, Case{"", "49983", "missing header\n"},
                        Case{"aaa", "port", "Invalid sandbox port\n"}, Case{"AAA", "49983", "Invalid sandbox ID\n"},
                        Case{"", "", "Invalid host\n"}}) {
    auto client = connect();
    client->send(request("GET", "/health", c.id, c.port));
    Response r = read_response(*client);
    ASSERT_TRUE(r.complete);
    EXPECT_EQ(r.status, 400u);
    EXPECT_EQ(r.body, c.body);
    EXPECT_EQ(r.headers["Content-Type"], "text/plain; charset=utf-8");
  }
  EXPECT_EQ(ctl_.connections, 0);
}

TEST_F(SandboxProxyTest, ControlPlaneRoutesOfEnvdAre404) {
  auto client = connect();
  client->send(request("POST", "/files/..//%69nit?x=1", "aaa", kEnvd, "Content-Length: 2\r\n") + "{}");
  Response r = read_response(*client);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.headers["Content-Type"], "application/json; charset=utf-8");
  EXPECT_EQ(r.body,
            R"({"message":"This endpoint is reserved for the E2B control plane and is not reachable through the sandbox URL","path":"/files/..//init","code":404})");
  // The same path on another port belongs to the user's server.
  client->send(request("GET", "/init", "aaa", "8080"));
  r = read_response(*client);
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find("path=/init"), std::string::npos) << r.body;
  EXPECT_EQ(ctl_.connections, 1);
}

TEST_F(SandboxProxyTest, TrafficTokenGuardsNonEnvdPorts) {
  auto client = connect();
  client->send(request("GET", "/whoami", "sec", "49999"));
  Response r = read_response(*client);
  EXPECT_EQ(r.status, 403u);
  EXPECT_EQ(r.body,
            R"({"sandboxId":"sec","message":"Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing","code":403})");
  client->send(request("GET", "/whoami", "sec", "49999", "e2b-traffic-access-token: tok-124\r\n"));
  r = read_response(*client);
  EXPECT_EQ(r.status, 403u);
  EXPECT_NE(r.body.find("Provided token in header 'e2b-traffic-access-token' is invalid"), std::string::npos);
  EXPECT_EQ(ctl_.connections, 0);
  client->send(request("GET", "/whoami", "sec", "49999", "e2b-traffic-access-token: tok-123\r\n"));
  r = read_response(*client);
  EXPECT_EQ(r.status, 200u);
  client->send(request("GET", "/whoami", "sec", kEnvd));  // envd: its own token guards it
  r = read_response(*client);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(ctl_.connections, 2);
}

TEST_F(SandboxProxyTest, GoneSandboxAndClosedPortAre502Json) {
  auto client = connect();
  client->send(request("GET", "/health", "nosuch", kEnvd));
  Response r = read_response(*client);
  EXPECT_EQ(r.status, 502u);
  EXPECT_EQ(r.headers["Content-Type"], "application/json; charset=utf-8");
  EXPECT_EQ(r.body, R"({"sandboxId":"nosuch","message":"The sandbox was not found","code":502})");
  client->send(request("GET", "/", "aaa", "7000"));
  r = read_response(*client);
  EXPECT_EQ(r.status, 502u);
  EXPECT_EQ(r.body, R"({"sandboxId":"aaa","message":"The sandbox is running but port is not open","port":7000,"code":502})");
  // A server that hangs up before answering: 502 as well, and the connection stays usable.
  client->send(request("GET", "/", "hangup", "8080"));
  r = read_response(*client);
  EXPECT_EQ(r.status, 502u);
  EXPECT_NE(r.body.find("port is not open"), std::string::npos);
  client->send(request("GET", "/whoami", "aaa", kEnvd));
  EXPECT_EQ(read_response(*client).status, 200u);
}

TEST_F(SandboxProxyTest, KeepAliveAcrossSandboxesAndHeaderHygiene) {
  auto client = connect();
  client->send(request("GET", "/whoami", "aaa", kEnvd,
                       "Connection: keep-alive, X-Drop\r\nX-Drop: 1\r\nKeep-Alive: timeout=5\r\nX-Custom: v\r\n"));
  Response a = read_response(*client);
  client->send(request("GET", "/whoami", "bbb", "49999"));
  Response b = read_response(*client);
  ASSERT_TRUE(a.complete);
  ASSERT_TRUE(b.complete);
  EXPECT_EQ(a.body, "id=aaa port=49983 path=/whoami host=localhost:3001 connection=close xdrop=no keepalive=no custom=v");
  EXPECT_EQ(b.body, "id=bbb port=49999 path=/whoami host=localhost:3001 connection=close xdrop=no keepalive=no custom=");
  EXPECT_EQ(a.headers["X-Upstream"], "1");
  EXPECT_EQ(a.headers["Content-Length"], std::to_string(a.body.size()));
  EXPECT_EQ(a.headers.count("Connection"), 0u);  // HTTP/1.1 keep-alive: nothing to say
  EXPECT_EQ(ctl_.connections, 2);                  // one upstream connection per request
}

TEST_F(SandboxProxyTest, StreamedChunksArriveBeforeTheUpstreamFinishes) {
  auto client = connect();
  client->send(request("POST", "/stream", "aaa", kEnvd, "Content-Length: 0\r\n"));
  std::string seen;
  auto collect = [&](std::string_view p) { seen += p; };
  Reader reader;
  // The upstream holds its second chunk until the gate opens (up to 10 s); a proxy that buffered
  // would leave the client with nothing within the 5 s receive timeout.
  Response r = reader.read(*client, collect, [&](const Response&) { return seen == "one"; });
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(seen, "one");
  EXPECT_EQ(r.headers["Transfer-Encoding"], "chunked");
  EXPECT_EQ(r.headers["Content-Type"], "application/connect+json");
  ctl_.gate = true;
  r = reader.read(*client, collect);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(seen, "onetwo");
  client->send(request("GET", "/whoami", "bbb", kEnvd));
  EXPECT_EQ(read_response(*client).status, 200u);
}

TEST_F(SandboxProxyTest, LargeChunkedUploadEchoesInBoundedMemory) {
  constexpr uint64_t kTotal = 128ull << 20;
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  auto client = connect();
  client->send(request("POST", "/echo", "aaa", kEnvd, "Transfer-Encoding: chunked\r\n"));
  std::thread writer([&] {
    std::vector<char> buf(300 * 1000);
    char head[32];
    for (uint64_t off = 0; off < kTotal;) {
      size_t k = std::min<uint64_t>(buf.size(), kTotal - off);
      for (size_t i = 0; i < k; ++i) buf[i] = static_cast<char>(pattern(off + i));
      int h = snprintf(head, sizeof head, "%zx\r\n", k);
      client->send(std::string_view(head, static_cast<size_t>(h)));
      client->send(std::string_view(buf.data(), k));
      client->send("\r\n");
      off += k;
    }
    client->send("0\r\n\r\n");
  });
  uint64_t received = 0;
  bool intact = true;
  Response r = read_response(*client, false, [&](std::string_view p) {
    for (size_t i = 0; i < p.size(); ++i) intact = intact && static_cast<unsigned char>(p[i]) == pattern(received + i);
    received += p.size();
  });
  writer.join();
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(received, kTotal);
  EXPECT_TRUE(intact);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB grown while relaying 128 MiB";
}

TEST_F(SandboxProxyTest, SizedUploadAndDownload) {
  constexpr uint64_t kTotal = 32ull << 20;
  auto client = connect();
  client->send(request("POST", "/count", "aaa", kEnvd, "Content-Length: " + std::to_string(kTotal) + "\r\n"));
  std::vector<char> buf(1 << 20);
  for (uint64_t off = 0; off < kTotal; off += buf.size()) {
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>(pattern(off + i));
    client->send(std::string_view(buf.data(), buf.size()));
  }
  Response up = read_response(*client);
  EXPECT_EQ(up.body, std::to_string(kTotal) + " ok");

  client->send(request("GET", "/download?n=" + std::to_string(kTotal), "bbb", kEnvd));
  uint64_t received = 0;
  bool intact = true;
  Response down = read_response(*client, false, [&](std::string_view p) {
    for (size_t i = 0; i < p.size(); ++i) intact = intact && static_cast<unsigned char>(p[i]) == pattern(received + i);
    received += p.size();
  });
  EXPECT_TRUE(down.complete);
  EXPECT_EQ(down.headers["Content-Length"], std::to_string(kTotal));
  EXPECT_EQ(down.headers.count("Transfer-Encoding"), 0u);
  EXPECT_EQ(received, kTotal);
  EXPECT_TRUE(intact);
}

TEST_F(SandboxProxyTest, HeadAndNoContentCarryNoBody) {
  auto client = connect();
  client->send(request("HEAD", "/head", "aaa", kEnvd));
  Response h = read_response(*client, true);
  EXPECT_TRUE(h.complete);
  EXPECT_EQ(h.status, 200u);
  EXPECT_EQ(h.headers["Content-Length"], "10");
  client->send(request("GET", "/nocontent", "aaa", kEnvd));
  Response n = read_response(*client);
  EXPECT_TRUE(n.complete);
  EXPECT_EQ(n.status, 204u);
  client->send(request("GET", "/whoami", "aaa", kEnvd));
  Response w = read_response(*client);
  EXPECT_EQ(w.status, 200u);  // framing stayed in step
  EXPECT_EQ(w.body.substr(0, 6), "id=aaa");
}

TEST_F(SandboxProxyTest, BodyUntilCloseIsRechunked) {
  auto client = connect();
  client->send(request("GET", "/eof", "aaa", kEnvd));
  Response r = read_response(*client);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.body, "until the end");
  EXPECT_EQ(r.headers["Transfer-Encoding"], "chunked");
  client->send(request("GET", "/whoami", "aaa", kEnvd));
  EXPECT_EQ(read_response(*client).status, 200u);
}

TEST_F(SandboxProxyTest, UpstreamCutMidStreamDropsTheClientWithoutTerminator) {
  auto client = connect();
  client->send(request("POST", "/cut", "aaa", kEnvd, "Content-Length: 0\r\n"));
  std::string seen;
  Response r = read_response(*client, false, [&](std::string_view p) { seen += p; });
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(seen, "partial");
  EXPECT_FALSE(r.complete);  // no terminating chunk...
  EXPECT_TRUE(client->eof());  // ...and the connection is gone
}

TEST_F(SandboxProxyTest, DepartedClientClosesUpstreamAtOnce) {
  auto client = connect();
  client->send(request("POST", "/quiet", "aaa", kEnvd, "Content-Length: 0\r\n"));
  std::string seen;
  read_response(*client, false, [&](std::string_view p) { seen += p; },
                [&](const Response&) { return seen == "hello"; });
  ASSERT_EQ(seen, "hello");
  auto t0 = std::chrono::steady_clock::now();
  client->close();
  while (!ctl_.saw_client_gone && std::chrono::steady_clock::now() - t0 < 5s) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(ctl_.saw_client_gone);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST_F(SandboxProxyTest, UpgradeBecomesATunnel) {
  auto client = connect();
  client->send(request("GET", "/ws", "aaa", "8080",
                       "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n"));
  // The 101 head ends at the blank line; everything after it is tunnel bytes.
  while (client->pending().find("\r\n\r\n") == std::string::npos && client->recv_more()) {
  }
  std::string& got = client->pending();
  auto end = got.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << got;
  std::string head = got.substr(0, end);
  got.erase(0, end + 4);
  EXPECT_EQ(head.rfind("HTTP/1.1 101 ", 0), 0u) << head;
  EXPECT_NE(head.find("Sec-WebSocket-Accept: test-accept"), std::string::npos) << head;
  EXPECT_NE(head.find("Upgrade: websocket"), std::string::npos) << head;
  client->send("hello tunnel");
  while (got.size() < 12 && client->recv_more()) {
  }
  EXPECT_EQ(got, "HELLO TUNNEL");
  client->send(std::string(100000, 'x'));
  got.clear();
  while (got.size() < 100000 && client->recv_more()) {
  }
  EXPECT_EQ(got, std::string(100000, 'X'));
}

TEST_F(SandboxProxyTest, RefusedUpgradeIsAnOrdinaryAnswer) {
  auto client = connect();
  client->send(request("GET", "/nope", "aaa", "8080", "Connection: Upgrade\r\nUpgrade: websocket\r\n"));
  Response r = read_response(*client);
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.body, "no such test route");
}

TEST_F(SandboxProxyTest, UpgradeWithoutConnectionTokenIsAPlainRequest) {
  auto client = connect();
  client->send(request("GET", "/whoami", "aaa", "8080", "Upgrade: h2c\r\n"));
  Response r = read_response(*client);
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find("path=/whoami"), std::string::npos);
}

TEST_F(SandboxProxyTest, PreflightIsGrantedAtTheEdgeWhenTheServiceDoesNot) {
  auto client = connect();
  client->send(request("OPTIONS", "/whoami", "aaa", "8080",
                       "Origin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n"
                       "Access-Control-Request-Headers: content-type, x-custom\r\n"));
  Response r = read_response(*client);
  EXPECT_EQ(r.status, 204u);
  EXPECT_EQ(r.headers["Access-Control-Allow-Origin"], "https://app.example");
  EXPECT_EQ(r.headers["Access-Control-Allow-Headers"], "content-type, x-custom");
  EXPECT_NE(r.headers["Access-Control-Allow-Methods"].find("POST"), std::string::npos);
  // The real request then carries the same grant.
  client->send(request("GET", "/whoami", "aaa", "8080", "Origin: https://app.example\r\n"));
  Response g = read_response(*client);
  EXPECT_EQ(g.status, 200u);
  EXPECT_EQ(g.headers["Access-Control-Allow-Origin"], "https://app.example");
}

TEST_F(SandboxProxyTest, ServiceOwnCorsWinsAndEnvdAnswersItsOwn) {
  auto client = connect();
  client->send(request("OPTIONS", "/cors", "aaa", "8080",
                       "Origin: https://app.example\r\nAccess-Control-Request-Method: GET\r\n"));
  Response r = read_response(*client);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.headers["Access-Control-Allow-Origin"], "https://only.example");
  EXPECT_EQ(r.body, "own cors");
  client->send(request("GET", "/cors", "aaa", "8080", "Origin: https://app.example\r\n"));
  Response g = read_response(*client);
  EXPECT_EQ(g.headers["Access-Control-Allow-Origin"], "https://only.example");
  // Port 49983 is envd's: the preflight is its business (here: the fake answers 404).
  client->send(request("OPTIONS", "/whoami2", "aaa", kEnvd,
                       "Origin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n"));
  Response e = read_response(*client);
  EXPECT_EQ(e.status, 404u);
  EXPECT_FALSE(e.headers.count("Access-Control-Allow-Origin"));
}

}  // namespace
}  // namespace cove::shim::edge
