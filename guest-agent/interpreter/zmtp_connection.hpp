#pragma once
// One ZMTP 3.0 connection over TCP, as the connecting peer of a kernel's socket: what a
// libzmq DEALER, SUB or REQ socket with a single connect() would do, without libzmq. No
// reconnects: a broken connection stays broken (the kernel owner starts over).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "interpreter/zmtp.hpp"

namespace cove::interpreter {

namespace net = boost::asio;

enum class ZmtpSocketType { dealer, sub, req };

// The connection failed, was closed, or the peer broke the protocol.
class ZmtpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Create with std::make_shared: queued writes keep the connection alive until flushed.
class ZmtpConnection : public std::enable_shared_from_this<ZmtpConnection> {
 public:
  using Clock = std::chrono::steady_clock;

  // `identity`: the routing id a ROUTER peer sees (READY's Identity property; DEALER/REQ).
  ZmtpConnection(net::any_io_executor executor, ZmtpSocketType type, std::string identity = {});
  ~ZmtpConnection();
  ZmtpConnection(const ZmtpConnection&) = delete;
  ZmtpConnection& operator=(const ZmtpConnection&) = delete;

  // Connects to 127.0.0.1:port, retrying while nothing listens yet (the kernel is starting),
  // then exchanges greetings and READY. Throws ZmtpError when `deadline` passes first, the peer
  // is not a compatible ZMTP 3 socket, or it answers with ERROR.
  net::awaitable<void> connect(uint16_t port, Clock::time_point deadline);

  // SUB only: subscribes to messages starting with `topic` (empty: everything), using the ZMTP
  // 3.0 form, a message whose single frame is 0x01 followed by the topic.
  void subscribe(const std::string& topic);

  // Queues one multipart message (at least one frame); a REQ peer adds the empty delimiter.
  // Writes happen in order in the background; a write error closes the connection, which the
  // pending receive() then reports. Throws ZmtpError if the connection is closed.
  void send(std::vector<std::string> frames);

  // The next multipart message (a REQ peer strips the delimiter). One caller at a time. Throws
  // ZmtpError when the connection breaks, is closed, or the peer violates the protocol.
  net::awaitable<std::vector<std::string>> receive();

  // Closes the socket: a pending receive() fails, queued writes are dropped.
  void close();
  bool is_open() const { return open_; }

  // The peer's READY properties (Socket-Type, ...).
  const zmtp::Metadata& peer_metadata() const { return peer_metadata_; }

 private:
  net::awaitable<void> handshake();
  net::awaitable<void> read_more();
  static net::awaitable<void> write_loop(std::shared_ptr<ZmtpConnection> self);
  void fail(const std::string& why);

  net::any_io_executor executor_;
  ZmtpSocketType type_;
  std::string identity_;
  net::ip::tcp::socket socket_;
  zmtp::Decoder decoder_;
  zmtp::Metadata peer_metadata_;
  bool open_ = false;
  bool closed_ = false;  // close() was called: stop retrying connects
  std::string error_;  // why the connection broke, once it did
  std::string outbox_;
  bool writing_ = false;
};

}  // namespace cove::interpreter
