#include "edge/host_route.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace cove::shim::edge {
namespace {
constexpr size_t kMaxIdLength = 128;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The host name without a :port suffix and without IPv6 brackets.
std::string_view hostname(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    return close == std::string_view::npos ? host.substr(1) : host.substr(1, close - 1);
  }
  auto colon = host.find(':');
  if (colon != std::string_view::npos && host.find(':', colon + 1) == std::string_view::npos) {
    return host.substr(0, colon);
  }
  return host;
}

bool is_loopback(std::string_view name) {
  std::string s(name);
  in_addr v4{};
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
  }
  return false;
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
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value == 0 || value > 65535) return false;
  port = static_cast<uint16_t>(value);
  return true;
}

SandboxRoute parse_sandbox_host(std::string_view host, std::string_view domain) {
  std::string_view name = hostname(host);
  auto dot = name.find('.');
  if (dot == std::string_view::npos) return fail(RouteError::invalid_host);
  std::string_view label = name.substr(0, dot);
  std::string_view rest = name.substr(dot + 1);
  if (!rest.empty() && rest.back() == '.') rest.remove_suffix(1);  // fully qualified form
  if (!domain.empty() && !iequals(rest, domain)) return fail(RouteError::invalid_host);

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
  std::string_view name = hostname(host);
  if (iequals(name, "localhost") || is_loopback(name)) return true;
  if (domain.empty()) return false;
  constexpr std::string_view kShared = "sandbox.";
  return name.size() == kShared.size() + domain.size() && iequals(name.substr(0, kShared.size()), kShared) &&
         iequals(name.substr(kShared.size()), domain);
}

SandboxRoute route_request(std::string_view host, std::string_view id_header,
                           std::string_view port_header, std::string_view domain) {
  bool has_headers = !id_header.empty() || !port_header.empty();
  if (has_headers && (domain.empty() || is_shared_host(host, domain))) {
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
