#include "files/media_type.hpp"

#include <cctype>
#include <optional>

namespace cove::files {
namespace {

constexpr std::string_view kTSpecials = "()<>@,;:\\\"/[]?=";

bool is_tspecial(unsigned char c) { return kTSpecials.find(static_cast<char>(c)) != std::string_view::npos; }
bool is_token_char(unsigned char c) { return c > 0x20 && c < 0x7f && !is_tspecial(c); }
bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim_left(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_space(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string_view trim(std::string_view s) {
  s = trim_left(s);
  while (!s.empty() && is_space(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits off the leading run of token characters.
std::string_view take_token(std::string_view& s) {
  size_t i = 0;
  while (i < s.size() && is_token_char(static_cast<unsigned char>(s[i]))) ++i;
  auto token = s.substr(0, i);
  s.remove_prefix(i);
  return token;
}

// A parameter value: a token or a quoted string. In a quoted string a backslash escapes only a
// tspecial (browsers send Windows paths unescaped); CR or LF inside makes it invalid.
std::optional<std::string> take_value(std::string_view& s) {
  if (s.empty() || s[0] != '"') {
    auto token = take_token(s);
    if (token.empty()) return std::nullopt;
    return std::string(token);
  }
  std::string out;
  for (size_t i = 1; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      s.remove_prefix(i + 1);
      return out;
    }
    if (c == '\\' && i + 1 < s.size() && is_tspecial(static_cast<unsigned char>(s[i + 1]))) {
      out.push_back(s[++i]);
      continue;
    }
    if (c == '\r' || c == '\n') return std::nullopt;
    out.push_back(c);
  }
  return std::nullopt;  // unterminated
}

std::string type_error(std::string_view t) {
  std::string_view rest = t;
  if (take_token(rest).empty()) return "mime: no media type";
  if (rest.empty()) return {};
  if (rest[0] != '/') return "mime: expected slash after first token";
  rest.remove_prefix(1);
  if (take_token(rest).empty()) return "mime: expected token after slash";
  if (!rest.empty()) return "mime: unexpected content after media subtype";
  return {};
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// charset'language'percent-encoded, charset utf-8 or us-ascii.
std::optional<std::string> decode_extended(std::string_view v) {
  auto q1 = v.find('\'');
  if (q1 == std::string_view::npos) return std::nullopt;
  auto q2 = v.find('\'', q1 + 1);
  if (q2 == std::string_view::npos) return std::nullopt;
  auto charset = lower(v.substr(0, q1));
  if (charset != "utf-8" && charset != "us-ascii") return std::nullopt;
  return percent_unescape(v.substr(q2 + 1));
}

}  // namespace

bool is_mime_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!is_token_char(c)) return false;
  }
  return true;
}

MediaType parse_media_type(std::string_view value) {
  MediaType out;
  auto semi = value.find(';');
  std::string_view base = value.substr(0, semi);
  std::string type = lower(trim(base));
  if (auto err = type_error(type); !err.empty()) {
    out.error = err;
    return out;
  }
  out.type = type;

  std::map<std::string, std::string> params;
  // Names containing '*' (RFC 2231), grouped by the name before the star.
  std::map<std::string, std::map<std::string, std::string>> extended;
  std::string_view rest = value.substr(base.size());
  for (;;) {
    rest = trim_left(rest);
    if (rest.empty()) break;
    std::string_view cursor = rest;
    bool ok = false;
    std::string name, val;
    if (cursor[0] == ';') {
      cursor = trim_left(cursor.substr(1));
      name = lower(take_token(cursor));
      if (!name.empty()) {
        cursor = trim_left(cursor);
        if (!cursor.empty() && cursor[0] == '=') {
          cursor = trim_left(cursor.substr(1));
          if (auto v = take_value(cursor)) {
            val = std::move(*v);
            ok = true;
          }
        }
      }
    }
    if (!ok) {
      if (trim(rest) == ";") break;  // a trailing semicolon is tolerated
      out.error = "mime: invalid media parameter";
      return out;
    }
    auto star = name.find('*');
    auto& target = star == std::string::npos ? params : extended[name.substr(0, star)];
    if (auto it = target.find(name); it != target.end() && it->second != val) {
      out.type.clear();
      out.error = "mime: duplicate parameter name";
      return out;
    }
    target[name] = std::move(val);
    rest = cursor;
  }

  for (auto& [key, pieces] : extended) {
    if (auto single = pieces.find(key + "*"); single != pieces.end()) {
      if (auto decoded = decode_extended(single->second)) params[key] = *decoded;
      continue;
    }
    std::string joined;
    bool any = false;
    for (size_t n = 0;; ++n) {
      std::string plain = key + "*" + std::to_string(n);
      if (auto it = pieces.find(plain); it != pieces.end()) {
        any = true;
        joined += it->second;
        continue;
      }
      auto it = pieces.find(plain + "*");
      if (it == pieces.end()) break;
      any = true;
      if (n == 0) {
        if (auto decoded = decode_extended(it->second)) joined += *decoded;
      } else if (auto decoded = percent_unescape(it->second)) {
        joined += *decoded;
      }
    }
    if (any) params[key] = joined;
  }
  out.params = std::move(params);
  return out;
}

std::string format_media_type(std::string_view type, const std::map<std::string, std::string>& params) {
  std::string out;
  auto slash = type.find('/');
  if (slash == std::string_view::npos) {
    if (!is_mime_token(type)) return {};
    out = lower(type);
  } else {
    if (!is_mime_token(type.substr(0, slash)) || !is_mime_token(type.substr(slash + 1))) return {};
    out = lower(type);
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const auto& [name, value] : params) {  // std::map: sorted, as Go sorts
    if (!is_mime_token(name)) return {};
    out += "; ";
    out += lower(name);
    bool encode = false;
    for (unsigned char c : value) {
      if ((c < ' ' || c > '~') && c != '\t') encode = true;
    }
    if (encode) {
      out += "*=utf-8''";
      for (unsigned char c : value) {
        if (c <= ' ' || c >= 0x7f || c == '*' || c == '\'' || c == '%' || is_tspecial(c)) {
          out += '%';
          out += kHex[c >> 4];
          out += kHex[c & 0x0f];
        } else {
          out += static_cast<char>(c);
        }
      }
      continue;
    }
    out += '=';
    if (is_mime_token(value)) {
      out += value;
      continue;
    }
    out += '"';
    for (char c : value) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out;
}

}  // namespace cove::files
