#include "config/values.hpp"

#include <arpa/inet.h>

namespace cove::shim {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Decimal without sign or leading zeros, at most `max`.
std::optional<uint32_t> parse_decimal(std::string_view text, uint32_t max) {
  if (text.empty() || text.size() > 10 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (!is_digit(c)) return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > max) return std::nullopt;
  return static_cast<uint32_t>(value);
}

bool is_valid_hostname(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    std::string_view label = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      bool ok = is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
      if (!ok) return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace

std::optional<uint32_t> parse_ipv4(std::string_view text) {
  uint32_t addr = 0;
  for (int i = 0; i < 4; ++i) {
    size_t dot = text.find('.');
    if ((i < 3) == (dot == std::string_view::npos)) return std::nullopt;
    auto octet = parse_decimal(text.substr(0, dot), 255);
    if (!octet) return std::nullopt;
    addr = (addr << 8) | *octet;
    text = i < 3 ? text.substr(dot + 1) : std::string_view();
  }
  return addr;
}

std::optional<ListenAddress> parse_listen_address(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto port = parse_decimal(text.substr(colon + 1), 65535);
  if (!port) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  ListenAddress out;
  out.port = static_cast<uint16_t>(*port);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    std::string inner(host.substr(1, host.size() - 2));
    in6_addr a6{};
    if (inner.empty() || inet_pton(AF_INET6, inner.c_str(), &a6) != 1) return std::nullopt;
    out.host = std::move(inner);
    out.ipv6 = true;
    return out;
  }
  if (!parse_ipv4(host)) return std::nullopt;
  out.host = std::string(host);
  return out;
}

std::optional<Ipv4Cidr> parse_ipv4_cidr(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto addr = parse_ipv4(text.substr(0, slash));
  auto prefix = parse_decimal(text.substr(slash + 1), 32);
  if (!addr || !prefix) return std::nullopt;
  uint32_t mask = *prefix == 0 ? 0 : ~uint32_t{0} << (32 - *prefix);
  if ((*addr & ~mask) != 0) return std::nullopt;
  return Ipv4Cidr{*addr, static_cast<int>(*prefix)};
}

bool is_valid_domain(std::string_view text) {
  size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    auto port = parse_decimal(text.substr(colon + 1), 65535);
    if (!port || *port == 0) return false;
    text = text.substr(0, colon);
  }
  return is_valid_hostname(text);
}

bool is_valid_interface_name(std::string_view text) {
  if (text.empty() || text.size() > 15 || text == "." || text == "..") return false;
  for (char c : text) {
    bool ok = is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool is_valid_template_name(std::string_view text) {
  if (text.empty() || text.size() > 64) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool ok = is_digit(c) || (c >= 'a' && c <= 'z') || (i > 0 && (c == '_' || c == '-'));
    if (!ok) return false;
  }
  return true;
}

}  // namespace cove::shim
