#pragma once
// ZMTP 3.0 (the ZeroMQ wire protocol, rfc.zeromq.org/spec/23) as a pure codec: greetings, the
// NULL mechanism's READY/ERROR commands and frames. No I/O, so every byte layout is unit-tested
// without a socket; zmtp_connection does the reading and writing. We implement it because the
// agent is static and libzmq has no static build on Debian 12.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cove::interpreter::zmtp {

// Malformed or unsupported input from the peer; the connection cannot continue.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr size_t kGreetingSize = 64;
// Large enough for any Jupyter message we expect (plots are a few MB), small enough that a
// corrupt length cannot make us allocate gigabytes.
constexpr uint64_t kDefaultMaxFrameSize = uint64_t{256} << 20;

// Our greeting: version 3.0, mechanism NULL, as-server 0 (we always connect).
std::string make_greeting();

struct Greeting {
  uint8_t major = 0;
  uint8_t minor = 0;
  std::string mechanism;  // without the NUL padding
  bool as_server = false;
};

// Parses exactly kGreetingSize bytes. Accepts major version 3 with any minor version (a 3.1
// peer talks 3.0 to us because our greeting says 3.0).
Greeting parse_greeting(std::string_view bytes);

// Command metadata (READY properties): names are case-insensitive on the wire, order kept.
using Metadata = std::vector<std::pair<std::string, std::string>>;

std::string encode_metadata(const Metadata& metadata);
Metadata parse_metadata(std::string_view bytes);
// Case-insensitive lookup.
std::optional<std::string> find_property(const Metadata& metadata, std::string_view name);

struct Command {
  std::string name;  // e.g. "READY", "ERROR"
  std::string data;  // the bytes after the name
};

// A command's frame body: name length, name, data.
std::string encode_command_body(std::string_view name, std::string_view data);
Command parse_command(std::string_view body);

// The complete READY command frame.
std::string encode_ready(const Metadata& metadata);
// The reason carried by an ERROR command's data.
std::string parse_error_reason(std::string_view data);

// One frame on the wire: flags byte, size (1 byte, or 8 bytes big-endian when > 255), body.
std::string encode_frame(std::string_view body, bool more, bool command = false);
// A multipart message: every frame but the last has MORE set. An empty message is invalid.
std::string encode_message(const std::vector<std::string>& frames);

struct Frame {
  bool more = false;
  bool command = false;
  std::string body;
};

// What the peer sent after the handshake: a command or a complete multipart message.
struct Incoming {
  std::optional<Command> command;
  std::vector<std::string> message;  // when !command
};

// Incremental decoder of frames: feed it whatever the socket returned, take out what is
// complete. Throws ProtocolError on malformed input; after that it stays failed.
class Decoder {
 public:
  explicit Decoder(uint64_t max_frame_size = kDefaultMaxFrameSize);

  void feed(std::string_view bytes);
  // The next complete frame, if any.
  std::optional<Frame> next_frame();
  // The next command or complete message (frames joined up to the one without MORE).
  std::optional<Incoming> next();

  // Bytes fed but not yet returned (for tests and buffering limits).
  size_t buffered() const { return buffer_.size() - offset_; }

 private:
  [[noreturn]] void fail(const std::string& why);

  uint64_t max_frame_size_;
  std::string buffer_;
  size_t offset_ = 0;
  std::vector<std::string> partial_;  // frames of an unfinished multipart message
  uint64_t partial_bytes_ = 0;
  std::string error_;
};

}  // namespace cove::interpreter::zmtp
