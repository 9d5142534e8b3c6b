#pragma once
// Connect streaming envelopes: 1 flag byte, 4-byte big-endian length, payload.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cove::rpc {

inline constexpr uint8_t kFlagCompressed = 0x01;
inline constexpr uint8_t kFlagEndStream = 0x02;

struct Envelope {
  uint8_t flags = 0;
  std::string payload;
};

std::string encode_envelope(uint8_t flags, std::string_view payload);

// Incremental parser: bytes arrive in arbitrary fragments.
class EnvelopeReader {
 public:
  explicit EnvelopeReader(size_t max_message_bytes) : max_(max_message_bytes) {}

  void feed(std::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }

  enum class Result { envelope, need_more, too_large };
  // On `envelope`, `out` holds the next message. `too_large` is sticky: the stream is unusable.
  Result next(Envelope& out);

  // Bytes of a partial envelope still buffered (non-zero at end of body means truncation).
  size_t pending() const { return buffer_.size() - offset_; }
  // Declared length of the envelope that was too large.
  uint64_t declared_length() const { return declared_; }

 private:
  size_t max_;
  std::string buffer_;
  size_t offset_ = 0;
  uint64_t declared_ = 0;
};

}  // namespace cove::rpc
