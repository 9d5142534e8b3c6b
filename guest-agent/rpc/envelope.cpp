#include "rpc/envelope.hpp"

namespace cove::rpc {

std::string encode_envelope(uint8_t flags, std::string_view payload) {
  std::string out;
  out.reserve(5 + payload.size());
  const uint32_t n = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(payload);
  return out;
}

EnvelopeReader::Result EnvelopeReader::next(Envelope& out) {
  if (declared_ > max_) return Result::too_large;
  if (pending() < 5) return Result::need_more;
  const auto* p = reinterpret_cast<const uint8_t*>(buffer_.data() + offset_);
  const uint64_t len = (uint64_t(p[1]) << 24) | (uint64_t(p[2]) << 16) | (uint64_t(p[3]) << 8) | p[4];
  if (len > max_) {
    declared_ = len;
    return Result::too_large;
  }
  if (pending() < 5 + len) return Result::need_more;
  out.flags = p[0];
  out.payload.assign(buffer_.data() + offset_ + 5, len);
  offset_ += 5 + len;
  // Compact once the consumed prefix dominates, keeping appends amortised O(1).
  if (offset_ > 4096 && offset_ * 2 > buffer_.size()) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  return Result::envelope;
}

}  // namespace cove::rpc
