#include "edge/host_route.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace cove::shim::edge {
namespace {
constexpr size_t kMaxIdLength = 128;
constexpr size_t kMaxLabel = 63;
constexpr size_t kMaxName = 253;  // without the trailing dot
constexpr size_t kMaxIpv6Text = 45;  // "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

bool all_digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_digit); }

// The host part of a Host header that passed the grammar.
struct Authority {
  std::string_view name;  // without brackets, port and trailing dot
  bool ip = false;        // an IPv4 or IPv6 literal
};

bool is_ipv4(std::string_view s) {
  int parts = 0;
  while (true) {
    auto dot = s.find('.');
    std::string_view part = s.substr(0, dot);
    if (!all_digits(part) || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return false;
    int value = 0;
    for (char c : part) value = value * 10 + (c - '0');
    if (value > 255) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  return parts == 4;
}

bool is_ipv6(std::string_view s) {
  if (s.empty() || s.size() > kMaxIpv6Text) return false;
  // inet_pton alone decides, but only over this alphabet: no zone ids, no stray bytes.
  for (char c : s) {
    if (!(is_digit(c) || (lower(c) >= 'a' && lower(c) <= 'f') || c == ':' || c == '.')) return false;
  }
  char text[kMaxIpv6Text + 1];
  std::memcpy(text, s.data(), s.size());
  text[s.size()] = '\0';
  in6_addr addr{};
  return inet_pton(AF_INET6, text, &addr) == 1;
}

// LDH labels; `name` has no trailing dot.
bool is_dns_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxName) return false;
  std::string_view last;
  while (true) {
    auto dot = name.find('.');
    std::string_view label = name.substr(0, dot);
    if (label.empty() || label.size() > kMaxLabel) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    if (!std::all_of(label.begin(), label.end(), [](char c) { return is_alnum(c) || c == '-'; })) return false;
    last = label;
    if (dot == std::string_view::npos) break;
    name.remove_prefix(dot + 1);
  }
  // "1.2.3.256" or "01.2.3.4" are not names: a numeric top-level label means an address was meant.
  return !all_digits(last);
}

std::optional<Authority> parse_authority(std::string_view host) {
  if (host.empty()) return std::nullopt;
  std::string_view name = host;
  std::string_view rest;  // after the host: "" or ":port"
  if (host.front() == '[') {
    auto close = host.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    name = host.substr(1, close - 1);
    rest = host.substr(close + 1);
  } else if (auto colon = host.find(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon);
    rest = host.substr(colon);
  }
  if (!rest.empty()) {
    uint16_t port = 0;
    if (rest.front() != ':' || !parse_port(rest.substr(1), port)) return std::nullopt;
  }
  if (host.front() == '[') {
    if (!is_ipv6(name)) return std::nullopt;
    return Authority{name, true};
  }
  if (is_ipv4(name)) return Authority{name, true};
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);  // fully qualified form
  if (!is_dns_name(name)) return std::nullopt;
  return Authority{name, false};
}

bool is_loopback(std::string_view literal) {
  char text[kMaxIpv6Text + 1];
  if (literal.size() > kMaxIpv6Text) return false;
  std::memcpy(text, literal.data(), literal.size());
  text[literal.size()] = '\0';
  in_addr v4{};
  if (inet_pton(AF_INET, text, &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, text, &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
  }
  return false;
}

// `name` is "<prefix>.<domain>" (case-insensitive).
bool is_subdomain(std::string_view name, std::string_view prefix, std::string_view domain) {
  return !domain.empty() && name.size() == prefix.size() + 1 + domain.size() &&
         iequals(name.substr(0, prefix.size()), prefix) && name[prefix.size()] == '.' &&
         iequals(name.substr(prefix.size() + 1), domain);
}

bool is_shared(const Authority& a, std::string_view domain) {
  if (a.ip) return is_loopback(a.name);
  return iequals(a.name, "localhost") || is_subdomain(a.name, "sandbox", domain);
}

SandboxRoute fail(RouteError e) {
  SandboxRoute r;
  r.error = e;
  return r;
}
}  // namespace

bool is_valid_sandbox_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  return std::all_of(id.begin(), id.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

bool parse_port(std::string_view text, uint16_t& port) {
  if (text.empty() || text.size() > 5) return false;
  uint32_t value = 0;
  for (char c : text) {
    if (!is_digit(c)) return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value == 0 || value > 65535) return false;
  port = static_cast<uint16_t>(value);
  return true;
}

std::string_view domain_host(std::string_view domain) {
  auto colon = domain.rfind(':');
  if (colon == std::string_view::npos || !all_digits(domain.substr(colon + 1))) return domain;
  std::string_view host = domain.substr(0, colon);
  // A bare IPv6 address ("::1") has no port to strip; a bracketed one does.
  if (host.find(':') != std::string_view::npos && !(host.front() == '[' && host.back() == ']')) return domain;
  return host;
}

bool is_valid_host_header(std::string_view host) { return parse_authority(host).has_value(); }

HostKind classify_host(std::string_view host, std::string_view domain) {
  auto authority = parse_authority(host);
  if (!authority) return HostKind::unknown;
  domain = domain_host(domain);
  if (is_subdomain(authority->name, "api", domain)) return HostKind::api;
  if (is_shared(*authority, domain)) return HostKind::shared;
  if (authority->ip) return HostKind::unknown;
  auto dot = authority->name.find('.');
  if (dot == std::string_view::npos) return HostKind::unknown;
  std::string_view label = authority->name.substr(0, dot);
  if (label.find('-') == std::string_view::npos) return HostKind::unknown;
  if (!domain.empty() && !iequals(authority->name.substr(dot + 1), domain)) return HostKind::unknown;
  return HostKind::sandbox_port;
}

SandboxRoute parse_sandbox_host(std::string_view host, std::string_view domain) {
  auto authority = parse_authority(host);
  if (!authority || authority->ip) return fail(RouteError::invalid_host);
  domain = domain_host(domain);
  std::string_view name = authority->name;
  auto dot = name.find('.');
  if (dot == std::string_view::npos) return fail(RouteError::invalid_host);
  std::string_view label = name.substr(0, dot);
  if (!domain.empty() && !iequals(name.substr(dot + 1), domain)) return fail(RouteError::invalid_host);

  auto dash = label.find('-');
  if (dash == std::string_view::npos) return fail(RouteError::invalid_host);
  std::string_view port_text = label.substr(0, dash);
  std::string_view id = label.substr(dash + 1);
  id = id.substr(0, id.find('-'));  // a trailing -<clientID> is ignored

  SandboxRoute route;
  if (!parse_port(port_text, route.port)) return fail(RouteError::invalid_port);
  if (!is_valid_sandbox_id(id)) return fail(RouteError::invalid_id);
  route.sandbox_id = std::string(id);
  return route;
}

SandboxRoute parse_sandbox_headers(std::string_view id_header, std::string_view port_header) {
  if (id_header.empty() || port_header.empty()) return fail(RouteError::missing_header);
  SandboxRoute route;
  if (!parse_port(port_header, route.port)) return fail(RouteError::invalid_port);
  if (!is_valid_sandbox_id(id_header)) return fail(RouteError::invalid_id);
  route.sandbox_id = std::string(id_header);
  return route;
}

bool is_shared_host(std::string_view host, std::string_view domain) {
  auto authority = parse_authority(host);
  return authority && is_shared(*authority, domain_host(domain));
}

SandboxRoute route_request(std::string_view host, std::string_view id_header,
                           std::string_view port_header, std::string_view domain) {
  domain = domain_host(domain);
  bool has_headers = !id_header.empty() || !port_header.empty();
  // The plain listener (no domain) routes on the headers alone, whatever name reached it (a
  // compose service name such as `cove_shim` is not a DNS name, and need not be).
  if (has_headers && domain.empty()) return parse_sandbox_headers(id_header, port_header);
  if (!is_valid_host_header(host)) return fail(RouteError::invalid_host);
  if (has_headers && is_shared_host(host, domain)) {
    return parse_sandbox_headers(id_header, port_header);
  }
  return parse_sandbox_host(host, domain);
}

std::string_view route_error_text(RouteError error) {
  switch (error) {
    case RouteError::none: return "";
    case RouteError::missing_header: return "missing header";
    case RouteError::invalid_host: return "Invalid host";
    case RouteError::invalid_port: return "Invalid sandbox port";
    case RouteError::invalid_id: return "Invalid sandbox ID";
  }
  return "";
}

}  // namespace cove::shim::edge
