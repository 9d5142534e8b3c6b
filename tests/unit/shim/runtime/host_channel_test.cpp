#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "runtime/container/host_channel.hpp"
#include "runtime/container/host_files.hpp"

namespace cove::shim::container {
namespace {

using local = net::local::stream_protocol;

struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/cove-channel-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() { remove_tree(path); }
};

// A stand-in agent: reads the handshake line and answers `reply` (or just closes), then sends
// `extra` so the test sees bytes after the reply reach the caller untouched.
net::awaitable<void> fake_agent(local::acceptor& acceptor, std::string reply, std::string extra, std::string& seen) {
  local::socket s = co_await acceptor.async_accept(net::use_awaitable);
  std::string line;
  char c;
  while (line.empty() || line.back() != '\n') {
    co_await net::async_read(s, net::buffer(&c, 1), net::use_awaitable);
    line.push_back(c);
  }
  seen = line;
  std::string out = reply + extra;
  if (!out.empty()) co_await net::async_write(s, net::buffer(out), net::use_awaitable);
}

// Runs the connect against a fake agent; returns the error code (or success) and what the caller
// read right after the handshake.
struct Outcome {
  boost::system::error_code ec;
  std::string after;
  std::string seen;
};
Outcome run(const std::string& socket_path, bool listen, std::string reply, std::string extra, uint16_t port) {
  net::io_context io;
  Outcome out;
  std::optional<local::acceptor> acceptor;
  if (listen) {
    acceptor.emplace(io, local::endpoint(socket_path));
    net::co_spawn(io, fake_agent(*acceptor, reply, extra, out.seen), net::detached);
  }
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        try {
          std::string path = socket_path;
          Socket s = co_await connect_host_channel(path, port);
          if (!extra.empty()) {
            out.after.resize(extra.size());
            co_await net::async_read(s, net::buffer(out.after), net::use_awaitable);
          }
        } catch (const boost::system::system_error& e) {
          out.ec = e.code();
        }
      },
      net::detached);
  io.run();
  return out;
}

}  // namespace

TEST(HandshakeReply, Parses) {
  EXPECT_EQ(parse_handshake_reply("OK 1\n"), 1u);
  EXPECT_EQ(parse_handshake_reply("OK 123456\n"), 123456u);
  EXPECT_EQ(parse_handshake_reply("OK 7\r\n"), 7u);
  EXPECT_FALSE(parse_handshake_reply("OK 1"));
  EXPECT_FALSE(parse_handshake_reply("OK \n"));
  EXPECT_FALSE(parse_handshake_reply("OK x\n"));
  EXPECT_FALSE(parse_handshake_reply("ok 1\n"));
  EXPECT_FALSE(parse_handshake_reply("HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_FALSE(parse_handshake_reply(""));
}

TEST(HostChannel, HandshakeThenStream) {
  ScratchDir dir;
  Outcome o = run(dir.path + "/agent.sock", true, "OK 5\n", "HTTP/1.1 204 No Content\r\n", 49983);
  EXPECT_FALSE(o.ec) << o.ec.message();
  EXPECT_EQ(o.seen, "CONNECT 49983\n");
  EXPECT_EQ(o.after, "HTTP/1.1 204 No Content\r\n");  // nothing of it was eaten by the handshake
}

TEST(HostChannel, CloseWithoutOkIsRefused) {
  ScratchDir dir;
  Outcome o = run(dir.path + "/agent.sock", true, "", "", 8080);
  EXPECT_EQ(o.seen, "CONNECT 8080\n");
  EXPECT_EQ(o.ec, boost::system::errc::connection_refused);
}

TEST(HostChannel, MissingSocketIsRefused) {
  ScratchDir dir;
  Outcome o = run(dir.path + "/agent.sock", false, "", "", 8080);
  EXPECT_EQ(o.ec, boost::system::errc::connection_refused);
}

TEST(HostChannel, GarbageReplyIsAProtocolError) {
  ScratchDir dir;
  Outcome o = run(dir.path + "/agent.sock", true, "HELLO\n", "", 8080);
  EXPECT_EQ(o.ec, boost::system::errc::protocol_error);
}

TEST(HostChannel, LongSocketPathsWork) {
  ScratchDir dir;
  std::string deep = dir.path + "/" + std::string(60, 'a');
  ASSERT_EQ(mkdir(deep.c_str(), 0700), 0);
  deep += "/" + std::string(60, 'b');
  ASSERT_EQ(mkdir(deep.c_str(), 0700), 0);
  std::string path = deep + "/agent.sock";
  ASSERT_GT(path.size(), 108u);
  // Bind through the directory's descriptor, as the agent would bind inside the sandbox.
  int fd = open(deep.c_str(), O_PATH | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  std::string via_fd = "/proc/self/fd/" + std::to_string(fd) + "/agent.sock";
  net::io_context io;
  local::acceptor acceptor(io, local::endpoint(via_fd));
  close(fd);
  std::string seen;
  boost::system::error_code ec;
  net::co_spawn(io, fake_agent(acceptor, "OK 1\n", "", seen), net::detached);
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        try {
          std::string p = path;
          Socket s = co_await connect_host_channel(p, 1234);
        } catch (const boost::system::system_error& e) {
          ec = e.code();
        }
      },
      net::detached);
  io.run();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(seen, "CONNECT 1234\n");
}

}  // namespace cove::shim::container
