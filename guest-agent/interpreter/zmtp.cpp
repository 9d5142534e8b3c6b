#include "interpreter/zmtp.hpp"

#include <algorithm>
#include <cctype>

namespace cove::interpreter::zmtp {
namespace {

constexpr uint8_t kFlagMore = 0x01;
constexpr uint8_t kFlagLong = 0x02;
constexpr uint8_t kFlagCommand = 0x04;

void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void put_u64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

uint64_t get_be(std::string_view bytes, size_t at, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  return v;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string make_greeting() {
  std::string g(kGreetingSize, '\0');
  g[0] = static_cast<char>(0xff);
  g[9] = 0x7f;
  g[10] = 3;  // major
  g[11] = 0;  // minor
  const std::string_view mechanism = "NULL";
  std::copy(mechanism.begin(), mechanism.end(), g.begin() + 12);
  g[32] = 0;  // as-server
  return g;
}

Greeting parse_greeting(std::string_view bytes) {
  if (bytes.size() != kGreetingSize) {
    throw ProtocolError("ZMTP greeting must be 64 bytes, got " + std::to_string(bytes.size()));
  }
  // Bytes 1..8 are padding any value may fill (libzmq writes a ZMTP 1.0 length there).
  if (static_cast<uint8_t>(bytes[0]) != 0xff || (static_cast<uint8_t>(bytes[9]) & 0x01) == 0) {
    throw ProtocolError("not a ZMTP peer (bad greeting signature)");
  }
  Greeting g;
  g.major = static_cast<uint8_t>(bytes[10]);
  g.minor = static_cast<uint8_t>(bytes[11]);
  if (g.major != 3) {
    throw ProtocolError("unsupported ZMTP version " + std::to_string(g.major) + "." +
                        std::to_string(g.minor) + " (need 3.x)");
  }
  std::string_view mech = bytes.substr(12, 20);
  size_t end = mech.find('\0');
  g.mechanism = std::string(mech.substr(0, end));
  for (size_t i = end == std::string_view::npos ? mech.size() : end; i < mech.size(); ++i) {
    if (mech[i] != '\0') throw ProtocolError("malformed ZMTP mechanism name");
  }
  uint8_t as_server = static_cast<uint8_t>(bytes[32]);
  if (as_server > 1) throw ProtocolError("malformed ZMTP as-server flag");
  g.as_server = as_server == 1;
  return g;
}

std::string encode_metadata(const Metadata& metadata) {
  std::string out;
  for (const auto& [name, value] : metadata) {
    if (name.empty() || name.size() > 255) throw ProtocolError("ZMTP property name must be 1..255 bytes");
    if (value.size() > UINT32_MAX) throw ProtocolError("ZMTP property value too long");
    out.push_back(static_cast<char>(name.size()));
    out += name;
    put_u32(out, static_cast<uint32_t>(value.size()));
    out += value;
  }
  return out;
}

Metadata parse_metadata(std::string_view bytes) {
  Metadata out;
  size_t at = 0;
  while (at < bytes.size()) {
    size_t name_len = static_cast<uint8_t>(bytes[at++]);
    if (name_len == 0) throw ProtocolError("ZMTP property with an empty name");
    if (bytes.size() - at < name_len + 4) throw ProtocolError("truncated ZMTP property");
    std::string name(bytes.substr(at, name_len));
    at += name_len;
    uint64_t value_len = get_be(bytes, at, 4);
    at += 4;
    if (bytes.size() - at < value_len) throw ProtocolError("truncated ZMTP property value of " + name);
    out.emplace_back(std::move(name), std::string(bytes.substr(at, value_len)));
    at += value_len;
  }
  return out;
}

std::optional<std::string> find_property(const Metadata& metadata, std::string_view name) {
  for (const auto& [n, v] : metadata) {
    if (iequals(n, name)) return v;
  }
  return std::nullopt;
}

std::string encode_command_body(std::string_view name, std::string_view data) {
  if (name.empty() || name.size() > 255) throw ProtocolError("ZMTP command name must be 1..255 bytes");
  std::string out;
  out.push_back(static_cast<char>(name.size()));
  out += name;
  out += data;
  return out;
}

Command parse_command(std::string_view body) {
  if (body.empty()) throw ProtocolError("empty ZMTP command");
  size_t name_len = static_cast<uint8_t>(body[0]);
  if (name_len == 0 || body.size() - 1 < name_len) throw ProtocolError("malformed ZMTP command name");
  return Command{std::string(body.substr(1, name_len)), std::string(body.substr(1 + name_len))};
}

std::string encode_ready(const Metadata& metadata) {
  return encode_frame(encode_command_body("READY", encode_metadata(metadata)), false, true);
}

std::string parse_error_reason(std::string_view data) {
  if (data.empty()) return {};
  size_t len = static_cast<uint8_t>(data[0]);
  return std::string(data.substr(1, std::min(len, data.size() - 1)));
}

std::string encode_frame(std::string_view body, bool more, bool command) {
  std::string out;
  uint8_t flags = (more ? kFlagMore : 0) | (command ? kFlagCommand : 0);
  if (body.size() > 255) {
    out.reserve(body.size() + 9);
    out.push_back(static_cast<char>(flags | kFlagLong));
    put_u64(out, body.size());
  } else {
    out.reserve(body.size() + 2);
    out.push_back(static_cast<char>(flags));
    out.push_back(static_cast<char>(body.size()));
  }
  out += body;
  return out;
}

std::string encode_message(const std::vector<std::string>& frames) {
  if (frames.empty()) throw ProtocolError("a ZMTP message needs at least one frame");
  std::string out;
  size_t total = 0;
  for (const auto& f : frames) total += f.size() + 9;
  out.reserve(total);
  for (size_t i = 0; i < frames.size(); ++i) out += encode_frame(frames[i], i + 1 < frames.size());
  return out;
}

Decoder::Decoder(uint64_t max_frame_size) : max_frame_size_(max_frame_size) {}

void Decoder::fail(const std::string& why) {
  error_ = why;
  throw ProtocolError(why);
}

void Decoder::feed(std::string_view bytes) {
  if (!error_.empty()) throw ProtocolError(error_);
  // Drop consumed bytes before growing, so the buffer holds at most one frame plus a read.
  if (offset_ > 0 && (offset_ >= buffer_.size() / 2 || offset_ > (1u << 16))) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  buffer_.append(bytes);
}

std::optional<Frame> Decoder::next_frame() {
  if (!error_.empty()) throw ProtocolError(error_);
  std::string_view avail(buffer_.data() + offset_, buffer_.size() - offset_);
  if (avail.size() < 2) return std::nullopt;
  uint8_t flags = static_cast<uint8_t>(avail[0]);
  if (flags & ~(kFlagMore | kFlagLong | kFlagCommand)) {
    fail("malformed ZMTP frame: reserved flag bits set (0x" + [&] {
      static const char* hex = "0123456789abcdef";
      return std::string{hex[flags >> 4], hex[flags & 15]};
    }() + ")");
  }
  const bool is_long = flags & kFlagLong;
  const size_t header = is_long ? 9 : 2;
  if (avail.size() < header) return std::nullopt;
  uint64_t size = is_long ? get_be(avail, 1, 8) : static_cast<uint8_t>(avail[1]);
  if (size > max_frame_size_) {
    fail("ZMTP frame of " + std::to_string(size) + " bytes exceeds the limit of " +
         std::to_string(max_frame_size_));
  }
  if ((flags & kFlagCommand) && (flags & kFlagMore)) fail("malformed ZMTP frame: a command with MORE set");
  if (avail.size() - header < size) return std::nullopt;
  Frame f;
  f.more = flags & kFlagMore;
  f.command = flags & kFlagCommand;
  f.body.assign(avail.data() + header, size);
  offset_ += header + size;
  if (offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  }
  return f;
}

std::optional<Incoming> Decoder::next() {
  while (auto frame = next_frame()) {
    if (frame->command) {
      if (!partial_.empty()) fail("malformed ZMTP stream: a command inside a multipart message");
      Incoming in;
      try {
        in.command = parse_command(frame->body);
      } catch (const ProtocolError& e) {
        fail(e.what());
      }
      return in;
    }
    partial_bytes_ += frame->body.size();
    if (partial_bytes_ > max_frame_size_) {
      fail("ZMTP message exceeds the limit of " + std::to_string(max_frame_size_) + " bytes");
    }
    partial_.push_back(std::move(frame->body));
    if (!frame->more) {
      Incoming in;
      in.message = std::move(partial_);
      partial_.clear();
      partial_bytes_ = 0;
      return in;
    }
  }
  return std::nullopt;
}

}  // namespace cove::interpreter::zmtp
