#include "files/quote.hpp"

#include <cctype>
#include <cstring>

namespace cove::files {
namespace {

// Length of a valid UTF-8 sequence starting at s[i] (excluding surrogates and overlongs), or 0.
size_t utf8_length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
  }
  if (n == 3 && c == 0xe0 && b(i + 1) < 0xa0) return 0;
  if (n == 3 && c == 0xed && b(i + 1) >= 0xa0) return 0;
  if (n == 4 && c == 0xf0 && b(i + 1) < 0x90) return 0;
  if (n == 4 && c == 0xf4 && b(i + 1) >= 0x90) return 0;
  return n;
}

}  // namespace

std::string go_quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '\a': out += "\\a"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\v': out += "\\v"; continue;
      case '\\': out += "\\\\"; continue;
      case '"': out += "\\\""; continue;
      default: break;
    }
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    if (c >= 0x80) {
      if (size_t n = utf8_length(s, i)) {
        out.append(s.substr(i, n));
        i += n - 1;
        continue;
      }
    }
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0x0f];
  }
  out += '"';
  return out;
}

std::string go_errno(int err) {
  std::string text = std::strerror(err);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

std::string go_path_error(std::string_view op, std::string_view path, int err) {
  return std::string(op) + " " + std::string(path) + ": " + go_errno(err);
}

}  // namespace cove::files
