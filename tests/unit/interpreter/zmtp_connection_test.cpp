// ZmtpConnection against a scripted peer on loopback (the real-libzmq side is covered by
// jupyter_kernel_test, which talks to ipykernel's pyzmq sockets).
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <optional>

#include "interpreter/zmtp_connection.hpp"

namespace cove::interpreter {
namespace {

using tcp = net::ip::tcp;
using namespace std::chrono_literals;

// Runs `task` on `io` until it finishes (or fails the test after `limit`); rethrows its error.
void run(net::io_context& io, std::function<net::awaitable<void>()> task, std::chrono::seconds limit = 10s) {
  bool done = false;
  std::exception_ptr error;
  net::co_spawn(io, task(), [&](std::exception_ptr e) {
    error = e;
    done = true;
  });
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    if (io.stopped()) io.restart();
    io.run_one_for(50ms);
  }
  ASSERT_TRUE(done) << "timed out";
  if (error) std::rethrow_exception(error);
}

// The peer side, written with our codec: greeting, READY of `peer_type`, then messages.
struct FakePeer {
  explicit FakePeer(net::io_context& io) : acceptor(io, tcp::endpoint(net::ip::address_v4::loopback(), 0)) {}
  uint16_t port() const { return acceptor.local_endpoint().port(); }

  net::awaitable<void> accept_and_greet(std::string peer_type) {
    socket = co_await acceptor.async_accept(net::use_awaitable);
    std::string greeting(64, '\0');
    co_await net::async_read(*socket, net::buffer(greeting), net::use_awaitable);
    client_greeting = zmtp::parse_greeting(greeting);
    std::string ours = zmtp::make_greeting();
    ours[11] = 1;  // a 3.1 peer, as libzmq 4.3
    ours[32] = 1;
    co_await net::async_write(*socket, net::buffer(ours), net::use_awaitable);
    auto ready = co_await next();
    if (!ready.command) throw std::runtime_error("expected READY");
    client_ready = zmtp::parse_metadata(ready.command->data);
    std::string reply = peer_type.empty() ? zmtp::encode_frame(zmtp::encode_command_body("ERROR", "\x06nope!!"), false, true)
                                          : zmtp::encode_ready({{"Socket-Type", peer_type}});
    co_await net::async_write(*socket, net::buffer(reply), net::use_awaitable);
  }

  net::awaitable<zmtp::Incoming> next() {
    for (;;) {
      if (auto in = decoder.next()) co_return std::move(*in);
      char buf[4096];
      size_t n = co_await socket->async_read_some(net::buffer(buf), net::use_awaitable);
      decoder.feed(std::string_view(buf, n));
    }
  }

  net::awaitable<void> write(std::string bytes) {
    co_await net::async_write(*socket, net::buffer(bytes), net::use_awaitable);
  }

  tcp::acceptor acceptor;
  std::optional<tcp::socket> socket;
  zmtp::Decoder decoder;
  zmtp::Greeting client_greeting;
  zmtp::Metadata client_ready;
};

TEST(ZmtpConnection, DealerHandshakeSendAndReceive) {
  net::io_context io;
  FakePeer peer(io);
  auto conn = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::dealer, "session-1");
  run(io, [&]() -> net::awaitable<void> {
    std::string router = "ROUTER";
    net::co_spawn(io, peer.accept_and_greet(router), net::detached);
    co_await conn->connect(peer.port(), std::chrono::steady_clock::now() + 5s);
    EXPECT_TRUE(conn->is_open());
    EXPECT_EQ(zmtp::find_property(conn->peer_metadata(), "Socket-Type").value_or(""), "ROUTER");
    EXPECT_EQ(peer.client_greeting.minor, 0);
    EXPECT_EQ(zmtp::find_property(peer.client_ready, "Socket-Type").value_or(""), "DEALER");
    EXPECT_EQ(zmtp::find_property(peer.client_ready, "Identity").value_or(""), "session-1");

    conn->send({"<IDS|MSG>", "sig", std::string(1000, 'x')});
    conn->send({"second"});
    auto first = co_await peer.next();
    EXPECT_EQ(first.message, (std::vector<std::string>{"<IDS|MSG>", "sig", std::string(1000, 'x')}));
    auto second = co_await peer.next();
    EXPECT_EQ(second.message, std::vector<std::string>{"second"});

    // A 3.1 PING command is skipped; messages arrive whole even when split across writes.
    std::string wire = zmtp::encode_frame(zmtp::encode_command_body("PING", std::string("\0\0", 2)), false, true) +
                       zmtp::encode_message({"a", "", "c"});
    std::string head = wire.substr(0, 7);
    co_await peer.write(head);
    net::co_spawn(io, peer.write(wire.substr(7)), net::detached);
    auto got = co_await conn->receive();
    EXPECT_EQ(got, (std::vector<std::string>{"a", "", "c"}));
  });
}

TEST(ZmtpConnection, SubSubscribesWithTheMessageForm) {
  net::io_context io;
  FakePeer peer(io);
  auto conn = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::sub);
  run(io, [&]() -> net::awaitable<void> {
    std::string pub = "PUB";
    net::co_spawn(io, peer.accept_and_greet(pub), net::detached);
    co_await conn->connect(peer.port(), std::chrono::steady_clock::now() + 5s);
    EXPECT_FALSE(zmtp::find_property(peer.client_ready, "Identity").has_value());
    conn->subscribe("");
    conn->subscribe("kernel.");
    auto all = co_await peer.next();
    EXPECT_EQ(all.message, std::vector<std::string>{std::string(1, '\x01')});
    auto prefix = co_await peer.next();
    EXPECT_EQ(prefix.message, std::vector<std::string>{"\x01kernel."});
  });
  auto dealer = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::dealer);
  EXPECT_THROW(dealer->subscribe(""), ZmtpError);
}

TEST(ZmtpConnection, ReqAddsAndStripsTheDelimiter) {
  net::io_context io;
  FakePeer peer(io);
  auto conn = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::req);
  run(io, [&]() -> net::awaitable<void> {
    std::string rep = "REP";
    net::co_spawn(io, peer.accept_and_greet(rep), net::detached);
    co_await conn->connect(peer.port(), std::chrono::steady_clock::now() + 5s);
    conn->send({"ping"});
    auto req = co_await peer.next();
    EXPECT_EQ(req.message, (std::vector<std::string>{"", "ping"}));
    std::string pong = zmtp::encode_message({"", "pong"});
    co_await peer.write(pong);
    auto reply = co_await conn->receive();
    EXPECT_EQ(reply, std::vector<std::string>{"pong"});
    std::string bare = zmtp::encode_message({"no-delimiter"});
    co_await peer.write(bare);
    try {
      co_await conn->receive();
      ADD_FAILURE() << "accepted a reply without the delimiter";
    } catch (const ZmtpError&) {
    }
    EXPECT_FALSE(conn->is_open());
  });
}

TEST(ZmtpConnection, RetriesUntilThePeerListens) {
  net::io_context io;
  uint16_t port;
  {
    tcp::acceptor probe(io, tcp::endpoint(net::ip::address_v4::loopback(), 0));
    port = probe.local_endpoint().port();
  }  // closed: connecting is refused for now
  auto conn = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::dealer);
  run(io, [&]() -> net::awaitable<void> {
    auto later = [&]() -> net::awaitable<void> {
      net::steady_timer t(io, 300ms);
      co_await t.async_wait(net::use_awaitable);
      FakePeer peer(io);
      peer.acceptor = tcp::acceptor(io, tcp::endpoint(net::ip::address_v4::loopback(), port));
      std::string router = "ROUTER";
      co_await peer.accept_and_greet(router);
      auto msg = co_await peer.next();
      std::string echo = zmtp::encode_message(msg.message);
      co_await peer.write(echo);
    };
    net::co_spawn(io, later(), net::detached);
    auto started = std::chrono::steady_clock::now();
    co_await conn->connect(port, started + 5s);
    EXPECT_GE(std::chrono::steady_clock::now() - started, 250ms);
    conn->send({"echo"});
    auto echoed = co_await conn->receive();
    EXPECT_EQ(echoed, std::vector<std::string>{"echo"});
  });
}

TEST(ZmtpConnection, DeadlineBoundsConnecting) {
  net::io_context io;
  uint16_t port;
  {
    tcp::acceptor probe(io, tcp::endpoint(net::ip::address_v4::loopback(), 0));
    port = probe.local_endpoint().port();
  }
  auto conn = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::dealer);
  auto started = std::chrono::steady_clock::now();
  EXPECT_THROW(run(io, [&]() -> net::awaitable<void> { co_await conn->connect(port, started + 200ms); }), ZmtpError);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);

  // A listener that never greets: the handshake is bounded by the same deadline.
  tcp::acceptor silent(io, tcp::endpoint(net::ip::address_v4::loopback(), 0));
  std::optional<tcp::socket> accepted;
  silent.async_accept([&](boost::system::error_code, tcp::socket s) { accepted.emplace(std::move(s)); });
  auto conn2 = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::dealer);
  started = std::chrono::steady_clock::now();
  try {
    run(io, [&]() -> net::awaitable<void> {
      co_await conn2->connect(silent.local_endpoint().port(), started + 300ms);
    });
    ADD_FAILURE() << "no timeout";
  } catch (const ZmtpError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

TEST(ZmtpConnection, RefusesIncompatibleOrErroringPeers) {
  for (std::string type : {std::string("PUB"), std::string()}) {
    net::io_context io;
    FakePeer peer(io);
    auto conn = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::dealer);
    try {
      run(io, [&]() -> net::awaitable<void> {
        net::co_spawn(io, peer.accept_and_greet(type), net::detached);
        co_await conn->connect(peer.port(), std::chrono::steady_clock::now() + 5s);
      });
      ADD_FAILURE() << "connected to " << type;
    } catch (const ZmtpError& e) {
      std::string what = e.what();
      if (type.empty()) {
        EXPECT_NE(what.find("nope!!"), std::string::npos) << what;
      } else {
        EXPECT_NE(what.find("'PUB'"), std::string::npos) << what;
      }
    }
    EXPECT_FALSE(conn->is_open());
  }
}

TEST(ZmtpConnection, GarbageFromThePeerIsAnErrorNotACrash) {
  net::io_context io;
  FakePeer peer(io);
  auto conn = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::dealer);
  run(io, [&]() -> net::awaitable<void> {
    std::string router = "ROUTER";
    net::co_spawn(io, peer.accept_and_greet(router), net::detached);
    co_await conn->connect(peer.port(), std::chrono::steady_clock::now() + 5s);
    std::string huge("\x02\xff\xff\xff\xff\xff\xff\xff\xff", 9);  // a 2^64-1 byte frame
    co_await peer.write(huge);
    try {
      co_await conn->receive();
      ADD_FAILURE() << "accepted a huge frame";
    } catch (const ZmtpError& e) {
      EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
    }
    EXPECT_THROW(conn->send({"x"}), ZmtpError);
  });
}

TEST(ZmtpConnection, CloseCancelsAPendingReceiveAndPeerCloseIsReported) {
  net::io_context io;
  FakePeer peer(io);
  auto conn = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::dealer);
  run(io, [&]() -> net::awaitable<void> {
    std::string router = "ROUTER";
    net::co_spawn(io, peer.accept_and_greet(router), net::detached);
    co_await conn->connect(peer.port(), std::chrono::steady_clock::now() + 5s);
    auto closer = [&]() -> net::awaitable<void> {
      net::steady_timer t(io, 100ms);
      co_await t.async_wait(net::use_awaitable);
      conn->close();
    };
    net::co_spawn(io, closer(), net::detached);
    bool failed = false;
    try {
      co_await conn->receive();
    } catch (const ZmtpError&) {
      failed = true;
    }
    EXPECT_TRUE(failed);
    EXPECT_FALSE(conn->is_open());
  });

  FakePeer peer2(io);
  auto conn2 = std::make_shared<ZmtpConnection>(io.get_executor(), ZmtpSocketType::dealer);
  run(io, [&]() -> net::awaitable<void> {
    std::string router = "ROUTER";
    net::co_spawn(io, peer2.accept_and_greet(router), net::detached);
    co_await conn2->connect(peer2.port(), std::chrono::steady_clock::now() + 5s);
    peer2.socket->close();
    try {
      co_await conn2->receive();
      ADD_FAILURE() << "no error at EOF";
    } catch (const ZmtpError& e) {
      EXPECT_NE(std::string(e.what()).find("closed by the peer"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace cove::interpreter
