#include "lifecycle/page_token.hpp"

#include <charconv>
#include <cstdint>

namespace cove::shim {
namespace {
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64url(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

std::optional<std::string> unbase64url(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    auto pos = kAlphabet.find(c);
    if (pos == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}
}  // namespace

std::string encode_page_token(TimePoint started_at, std::string_view id) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(started_at.time_since_epoch()).count();
  return base64url("v1." + std::to_string(ns) + "." + std::string(id));
}

std::optional<std::pair<TimePoint, std::string>> decode_page_token(std::string_view token) {
  if (token.empty() || token.size() > 200) return std::nullopt;
  auto raw = unbase64url(token);
  if (!raw || raw->rfind("v1.", 0) != 0) return std::nullopt;
  std::string_view rest(*raw);
  rest.remove_prefix(3);
  auto dot = rest.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  int64_t ns = 0;
  auto number = rest.substr(0, dot);
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), ns);
  if (ec != std::errc() || ptr != number.data() + number.size() || ns < 0) return std::nullopt;
  std::string id(rest.substr(dot + 1));
  if (!valid_id(id)) return std::nullopt;
  // Canonical form only: a token must re-encode to itself.
  TimePoint at{std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns))};
  if (encode_page_token(at, id) != token) return std::nullopt;
  return std::make_pair(at, std::move(id));
}

}  // namespace cove::shim
