// The host channel lets go before a checkpoint: every connection but the one carrying /freeze is
// cut and its descriptor closed (idle keep-alive, streaming, spliced port-forwards), the splicer
// releases its io_uring and worker threads, a connection that does not close in time is
// reported, and connections made afterwards are served normally. Real sockets, bounded waits.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fstream>
#include <optional>
#include <string>

#include "net/host_channel.hpp"

namespace net = boost::asio;
using namespace std::chrono_literals;
using cove::netio::HostChannel;
using cove::netio::Socket;
using cove::netio::Splicer;
using Clock = std::chrono::steady_clock;

namespace {

// Descriptors of this process whose link reads exactly `target`.
int count_fds(const std::string& target) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = d ? readdir(d) : nullptr) {
    char link[256];
    std::string path = std::string("/proc/self/fd/") + e->d_name;
    ssize_t len = readlink(path.c_str(), link, sizeof link - 1);
    if (len > 0 && std::string(link, static_cast<size_t>(len)) == target) ++n;
  }
  if (d) closedir(d);
  return n;
}

// Threads of this process named iou-wrk-* (io_uring's workers).
int io_uring_workers() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  while (dirent* e = d ? readdir(d) : nullptr) {
    if (e->d_name[0] == '.') continue;
    std::string comm;
    std::ifstream(std::string("/proc/self/task/") + e->d_name + "/comm") >> comm;
    if (comm.rfind("iou-wrk", 0) == 0) ++n;
  }
  if (d) closedir(d);
  return n;
}

// The test's end of a connection: non-blocking, read by pump().
struct Client {
  int fd = -1;
  std::string received;
  bool eof = false;
  ~Client() {
    if (fd >= 0) close(fd);
  }
  void send(const std::string& s) { ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size())); }
  void pump() {
    char buf[4096];
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        received.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) eof = true;
      return;
    }
  }
};

class ChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(splicer.start(&error)) << error;
    cove::http::Handler handler = [this](cove::http::Exchange& ex) { return handle(ex); };
    channel.emplace(io.get_executor(), handler, kOwnPort, splicer, 300ms);
  }

  net::awaitable<void> handle(cove::http::Exchange& ex) {
    if (ex.path() == "/stream") {
      co_await ex.begin_stream(200, "text/plain");
      net::steady_timer tick(io);
      const std::string_view line = "tick\n";
      while (co_await ex.write_chunk(line)) {
        tick.expires_after(10ms);
        co_await tick.async_wait(net::use_awaitable);
      }
      co_return;
    }
    if (ex.path() == "/freeze") {  // as rest/endpoints.cpp
      ex.close_after();
      const int fd = ex.socket().native_handle();
      freeze_result = co_await channel->let_go(fd);
      co_await ex.respond(204, "", "");
      co_return;
    }
    if (ex.path() == "/stuck") {  // ignores its connection for a while
      net::steady_timer t(io, 600ms);
      co_await t.async_wait(net::use_awaitable);
    }
    co_await ex.respond(204, "", "");
  }

  // A connection served by the channel; the test holds the other end.
  std::unique_ptr<Client> connect() {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    Socket server(io, net::generic::stream_protocol(AF_UNIX, SOCK_STREAM), sv[0]);
    net::co_spawn(io, channel->serve(std::move(server)), net::detached);
    auto c = std::make_unique<Client>();
    c->fd = sv[1];
    return c;
  }

  template <typename Pred>
  bool run_until(Pred done, std::chrono::milliseconds limit = 3s) {
    const auto deadline = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() >= deadline) return false;
      io.restart();
      io.run_for(2ms);
    }
    return true;
  }

  static constexpr uint16_t kOwnPort = 1;  // never a CONNECT target here
  net::io_context io;
  Splicer splicer;
  std::optional<HostChannel> channel;
  std::optional<std::string> freeze_result;
};

const std::string kHealth = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
const std::string kFreeze = "POST /freeze HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_F(ChannelTest, FreezeCutsKeepAliveAndStreamingConnectionsThenClosesItsOwn) {
  auto idle = connect();
  idle->send(kHealth);
  ASSERT_TRUE(run_until([&] { idle->pump(); return idle->received.find("\r\n\r\n") != std::string::npos; }));
  ASSERT_TRUE(starts_with(idle->received, "HTTP/1.1 204"));
  auto stream = connect();
  stream->send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(run_until([&] { stream->pump(); return stream->received.find("tick") != std::string::npos; }));
  EXPECT_EQ(channel->open_connections(), 2u);

  auto freezer = connect();
  freezer->send(kFreeze);
  ASSERT_TRUE(run_until([&] {
    for (auto* c : {idle.get(), stream.get(), freezer.get()}) c->pump();
    return idle->eof && stream->eof && freezer->eof;
  }));
  EXPECT_EQ(freeze_result, std::optional<std::string>(""));
  // The freeze connection got its answer before it was closed.
  EXPECT_TRUE(starts_with(freezer->received, "HTTP/1.1 204")) << freezer->received;
  EXPECT_TRUE(idle->received.find("HTTP/1.1", 1) == std::string::npos) << "nothing more on the idle one";
  EXPECT_EQ(channel->open_connections(), 0u);
  EXPECT_FALSE(splicer.running());
}

TEST_F(ChannelTest, ConnectionsAfterTheFreezeAreServedAndAFreezeRepeats) {
  for (int round = 0; round < 2; ++round) {
    auto freezer = connect();
    freezer->send(kFreeze);
    ASSERT_TRUE(run_until([&] { freezer->pump(); return freezer->eof; }));
    EXPECT_TRUE(starts_with(freezer->received, "HTTP/1.1 204")) << round;
  }
  auto later = connect();
  later->send(kHealth);
  ASSERT_TRUE(run_until([&] { later->pump(); return later->received.find("\r\n\r\n") != std::string::npos; }));
  EXPECT_TRUE(starts_with(later->received, "HTTP/1.1 204"));
  EXPECT_FALSE(later->eof);  // kept alive as usual
  EXPECT_EQ(channel->open_connections(), 1u);
}

TEST_F(ChannelTest, AConnectionThatDoesNotCloseInTimeIsReported) {
  auto stuck = connect();
  stuck->send("GET /stuck HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(run_until([&] { return channel->open_connections() == 1; }));
  io.restart();
  io.run_for(20ms);  // the handler is waiting
  auto freezer = connect();
  freezer->send(kFreeze);
  ASSERT_TRUE(run_until([&] { freezer->pump(); return freezer->eof; }));
  ASSERT_TRUE(freeze_result.has_value());
  EXPECT_EQ(*freeze_result, "1 host-channel connection(s) still open 300 ms after being shut down");
  // Once the handler is done the connection closes after all.
  ASSERT_TRUE(run_until([&] { stuck->pump(); return stuck->eof && channel->open_connections() == 0; }));
}

TEST_F(ChannelTest, SplicedConnectionsAreCutAndTheRingIsReleasedUntilTakenBack) {
  // A service inside the "sandbox".
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);

  auto host = connect();
  host->send("CONNECT " + std::to_string(port) + "\n");
  Client service;
  ASSERT_TRUE(run_until([&] {
    if (service.fd < 0) service.fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    host->pump();
    return service.fd >= 0 && starts_with(host->received, "OK ");
  }));
  close(listener);
  host->received.clear();
  host->send("ping");
  ASSERT_TRUE(run_until([&] { service.pump(); return service.received == "ping"; }));
  service.send("pong");
  ASSERT_TRUE(run_until([&] { host->pump(); return host->received == "pong"; }));
  EXPECT_EQ(splicer.active_sessions(), 1u);
  EXPECT_EQ(count_fds("anon_inode:[io_uring]"), 1);

  auto freezer = connect();
  freezer->send(kFreeze);
  ASSERT_TRUE(run_until([&] {
    for (auto* c : {host.get(), &service, freezer.get()}) c->pump();
    return host->eof && service.eof && freezer->eof;
  }));
  EXPECT_EQ(freeze_result, std::optional<std::string>(""));
  EXPECT_FALSE(splicer.running());
  EXPECT_EQ(splicer.active_sessions(), 0u);
  EXPECT_EQ(count_fds("anon_inode:[io_uring]"), 0);
  // The workers end with the splicer's thread; the kernel may take a moment to reap them.
  ASSERT_TRUE(run_until([] { return io_uring_workers() == 0; }, 2s)) << io_uring_workers() << " iou-wrk threads left";

  channel->take_back();
  EXPECT_TRUE(splicer.running());
  EXPECT_EQ(count_fds("anon_inode:[io_uring]"), 1);
}

TEST(Splicer, StopIsIdempotentAndAddStartsAStoppedSplicer) {
  Splicer splicer;
  splicer.stop();  // never started
  std::string error;
  ASSERT_TRUE(splicer.start(&error)) << error;
  ASSERT_TRUE(splicer.start(&error));  // already running
  splicer.stop();
  splicer.stop();
  EXPECT_FALSE(splicer.running());
  EXPECT_EQ(count_fds("anon_inode:[io_uring]"), 0);

  int a[2], b[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
  ASSERT_TRUE(splicer.add(a[0], b[0]));  // the splicer owns a[0] and b[0] now
  EXPECT_TRUE(splicer.running());
  ASSERT_EQ(write(a[1], "x", 1), 1);
  char c = 0;
  pollfd p{b[1], POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  ASSERT_EQ(read(b[1], &c, 1), 1);
  EXPECT_EQ(c, 'x');
  splicer.stop();
  // Both of its sockets were closed: the test's ends see EOF.
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  EXPECT_EQ(read(b[1], &c, 1), 0);
  close(a[1]);
  close(b[1]);
}
