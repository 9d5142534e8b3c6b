#include "interpreter/zmtp_connection.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>

namespace cove::interpreter {
namespace {

using tcp = net::ip::tcp;

std::string_view type_name(ZmtpSocketType type) {
  switch (type) {
    case ZmtpSocketType::dealer: return "DEALER";
    case ZmtpSocketType::sub: return "SUB";
    case ZmtpSocketType::req: return "REQ";
  }
  return "";
}

// The peer socket types ZMTP allows to talk to ours.
bool compatible_peer(ZmtpSocketType type, std::string_view peer) {
  switch (type) {
    case ZmtpSocketType::dealer: return peer == "ROUTER" || peer == "DEALER" || peer == "REP";
    case ZmtpSocketType::sub: return peer == "PUB" || peer == "XPUB";
    case ZmtpSocketType::req: return peer == "REP" || peer == "ROUTER";
  }
  return false;
}

}  // namespace

ZmtpConnection::ZmtpConnection(net::any_io_executor executor, ZmtpSocketType type, std::string identity)
    : executor_(executor), type_(type), identity_(std::move(identity)), socket_(executor) {}

ZmtpConnection::~ZmtpConnection() { close(); }

void ZmtpConnection::fail(const std::string& why) {
  if (error_.empty()) error_ = why;
  open_ = false;
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void ZmtpConnection::close() {
  closed_ = true;
  fail("connection closed");
  outbox_.clear();
}

net::awaitable<void> ZmtpConnection::connect(uint16_t port, Clock::time_point deadline) {
  const tcp::endpoint endpoint(net::ip::address_v4::loopback(), port);
  const std::string where = "127.0.0.1:" + std::to_string(port);
  net::steady_timer pause(executor_);
  for (;;) {
    if (closed_) throw ZmtpError("connection to " + where + " closed while connecting");
    boost::system::error_code ec;
    socket_.close(ec);
    socket_.open(tcp::v4(), ec);
    if (ec) throw ZmtpError("cannot create a socket: " + ec.message());
    co_await socket_.async_connect(endpoint, net::redirect_error(net::use_awaitable, ec));
    if (!ec) break;
    if (closed_) throw ZmtpError("connection to " + where + " closed while connecting");
    if (Clock::now() >= deadline) {
      throw ZmtpError("cannot connect to " + where + " before the deadline: " + ec.message());
    }
    // Nothing listens yet: the kernel is still starting.
    pause.expires_at(std::min(deadline, Clock::now() + std::chrono::milliseconds(20)));
    co_await pause.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
  if (closed_) throw ZmtpError("connection to " + where + " closed while connecting");
  open_ = true;
  error_.clear();
  boost::system::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);

  // The handshake is bounded by the same deadline: a watchdog cancels the socket's operations.
  auto timed_out = std::make_shared<bool>(false);
  auto watchdog = std::make_shared<net::steady_timer>(executor_, deadline);
  std::weak_ptr<ZmtpConnection> weak = weak_from_this();
  watchdog->async_wait([weak, timed_out](boost::system::error_code ec) {
    if (ec) return;
    if (auto self = weak.lock()) {
      *timed_out = true;
      boost::system::error_code ignored;
      self->socket_.cancel(ignored);
    }
  });
  try {
    co_await handshake();
  } catch (const ZmtpError& e) {
    watchdog->cancel();
    std::string why = *timed_out ? "ZMTP handshake with " + where + " timed out" : std::string(e.what());
    fail(why);
    throw ZmtpError(why);
  }
  watchdog->cancel();
}

net::awaitable<void> ZmtpConnection::handshake() {
  boost::system::error_code ec;
  std::string greeting = zmtp::make_greeting();
  co_await net::async_write(socket_, net::buffer(greeting), net::redirect_error(net::use_awaitable, ec));
  if (ec) throw ZmtpError("sending the ZMTP greeting failed: " + ec.message());

  std::string peer(zmtp::kGreetingSize, '\0');
  co_await net::async_read(socket_, net::buffer(peer), net::redirect_error(net::use_awaitable, ec));
  if (ec) throw ZmtpError("reading the peer's ZMTP greeting failed: " + ec.message());
  zmtp::Greeting g;
  try {
    g = zmtp::parse_greeting(peer);
  } catch (const zmtp::ProtocolError& e) {
    throw ZmtpError(e.what());
  }
  if (g.mechanism != "NULL") throw ZmtpError("peer wants ZMTP mechanism " + g.mechanism + ", only NULL is supported");

  zmtp::Metadata ours{{"Socket-Type", std::string(type_name(type_))}};
  if (type_ != ZmtpSocketType::sub) ours.emplace_back("Identity", identity_);
  std::string ready = zmtp::encode_ready(ours);
  co_await net::async_write(socket_, net::buffer(ready), net::redirect_error(net::use_awaitable, ec));
  if (ec) throw ZmtpError("sending READY failed: " + ec.message());

  for (;;) {
    std::optional<zmtp::Incoming> in;
    try {
      in = decoder_.next();
    } catch (const zmtp::ProtocolError& e) {
      throw ZmtpError(e.what());
    }
    if (!in) {
      co_await read_more();
      continue;
    }
    if (!in->command) throw ZmtpError("peer sent a message before READY");
    if (in->command->name == "ERROR") {
      throw ZmtpError("peer refused the connection: " + zmtp::parse_error_reason(in->command->data));
    }
    if (in->command->name != "READY") throw ZmtpError("expected READY, peer sent " + in->command->name);
    try {
      peer_metadata_ = zmtp::parse_metadata(in->command->data);
    } catch (const zmtp::ProtocolError& e) {
      throw ZmtpError(e.what());
    }
    auto peer_type = zmtp::find_property(peer_metadata_, "Socket-Type").value_or("");
    if (!compatible_peer(type_, peer_type)) {
      throw ZmtpError("a " + std::string(type_name(type_)) + " socket cannot talk to a peer of type '" +
                      peer_type + "'");
    }
    co_return;
  }
}

net::awaitable<void> ZmtpConnection::read_more() {
  if (!open_) throw ZmtpError(error_.empty() ? "connection closed" : error_);
  char chunk[64 * 1024];
  boost::system::error_code ec;
  size_t n = co_await socket_.async_read_some(net::buffer(chunk), net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    fail(ec == net::error::eof ? "connection closed by the peer" : ec.message());
    throw ZmtpError(error_);
  }
  decoder_.feed(std::string_view(chunk, n));
}

void ZmtpConnection::subscribe(const std::string& topic) {
  if (type_ != ZmtpSocketType::sub) throw ZmtpError("only a SUB socket subscribes");
  send({std::string(1, '\x01') + topic});
}

void ZmtpConnection::send(std::vector<std::string> frames) {
  if (!open_) throw ZmtpError(error_.empty() ? "connection is not open" : error_);
  if (type_ == ZmtpSocketType::req) frames.insert(frames.begin(), std::string());
  try {
    outbox_ += zmtp::encode_message(frames);
  } catch (const zmtp::ProtocolError& e) {
    throw ZmtpError(e.what());
  }
  if (!writing_) {
    writing_ = true;
    net::co_spawn(executor_, write_loop(shared_from_this()), net::detached);
  }
}

net::awaitable<void> ZmtpConnection::write_loop(std::shared_ptr<ZmtpConnection> self) {
  while (self->open_ && !self->outbox_.empty()) {
    std::string batch = std::move(self->outbox_);
    self->outbox_.clear();
    boost::system::error_code ec;
    co_await net::async_write(self->socket_, net::buffer(batch), net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      self->fail("write failed: " + ec.message());
      break;
    }
  }
  self->writing_ = false;
}

net::awaitable<std::vector<std::string>> ZmtpConnection::receive() {
  for (;;) {
    std::optional<zmtp::Incoming> in;
    try {
      in = decoder_.next();
    } catch (const zmtp::ProtocolError& e) {
      fail(e.what());
      throw ZmtpError(e.what());
    }
    if (!in) {
      co_await read_more();
      continue;
    }
    if (in->command) {
      if (in->command->name == "ERROR") {
        fail("peer sent ERROR: " + zmtp::parse_error_reason(in->command->data));
        throw ZmtpError(error_);
      }
      continue;  // nothing else (e.g. a 3.1 PING) needs an answer from a 3.0 peer
    }
    if (type_ == ZmtpSocketType::req) {
      if (in->message.empty() || !in->message.front().empty()) {
        fail("REQ peer received a reply without the empty delimiter");
        throw ZmtpError(error_);
      }
      in->message.erase(in->message.begin());
    }
    co_return std::move(in->message);
  }
}

}  // namespace cove::interpreter
