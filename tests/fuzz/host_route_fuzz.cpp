// libFuzzer target: the edge's Host / header route parser (host-shim/edge/host_route.hpp).
//
// Input: up to four '\n'-separated fields: Host, E2b-Sandbox-Id, E2b-Sandbox-Port, domain (a missing
// field is empty). Every function runs against the fuzzed domain and against the default
// "cove.localhost"; an accepted route is checked against an independent, deliberately plain
// restatement of the grammar, and the functions are checked against each other: an accepted route
// has a port of 1..65535 equal to the digits it came from, an id of [a-z0-9]{1,128} taken from the
// Host label or equal to the header, a Host whose parent domain is the configured one; api, shared
// and sandbox_port hosts never overlap, and a Host failing the grammar is refused everywhere.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "edge/host_route.hpp"

namespace {

using namespace cove::shim::edge;

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      __builtin_trap();                                                                    \
    }                                                                                      \
  } while (0)

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool digits_only(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The decimal value of 1..5 digits, or -1.
long decimal(std::string_view s) {
  if (!digits_only(s) || s.size() > 5) return -1;
  long v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

bool id_ok(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

bool ldh_label(std::string_view l) {
  if (l.empty() || l.size() > 63 || l.front() == '-' || l.back() == '-') return false;
  for (char c : l) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Splits "name[:port]" of a non-bracketed Host; false when the port part is not 1..65535.
bool split_port(std::string_view host, std::string_view& name) {
  auto colon = host.find(':');
  name = host.substr(0, colon);
  if (colon == std::string_view::npos) return true;
  long port = decimal(host.substr(colon + 1));
  return port >= 1 && port <= 65535;
}

// A Host that routed to a sandbox by itself: <digits>-<id>[-...].<domain>[.][:port], each label LDH.
void check_sandbox_host(std::string_view host, std::string_view domain, const SandboxRoute& r) {
  CHECK(!host.empty() && host.front() != '[');
  std::string_view name;
  CHECK(split_port(host, name));
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  CHECK(!name.empty() && name.size() <= 253);
  auto dot = name.find('.');
  CHECK(dot != std::string_view::npos);
  std::string_view label = name.substr(0, dot);
  std::string_view parent = name.substr(dot + 1);
  CHECK(ldh_label(label));
  for (size_t start = 0; start <= parent.size();) {
    auto end = parent.find('.', start);
    if (end == std::string_view::npos) end = parent.size();
    CHECK(ldh_label(parent.substr(start, end - start)));
    start = end + 1;
  }
  if (!domain.empty()) CHECK(iequals(parent, domain));
  auto dash = label.find('-');
  CHECK(dash != std::string_view::npos);
  CHECK(decimal(label.substr(0, dash)) == r.port);
  std::string_view rest = label.substr(dash + 1);
  CHECK(rest.substr(0, rest.find('-')) == r.sandbox_id);
  CHECK(host.find(r.sandbox_id) != std::string_view::npos);
}

void check_route_shape(const SandboxRoute& r) {
  if (r.ok()) {
    CHECK(r.port >= 1);
    CHECK(id_ok(r.sandbox_id));
  } else {
    CHECK(r.sandbox_id.empty());
    CHECK(r.port == 0);
    CHECK(!route_error_text(r.error).empty());
  }
}

void check_all(std::string_view host, std::string_view id_header, std::string_view port_header,
               std::string_view raw_domain) {
  const std::string_view domain = domain_host(raw_domain);
  CHECK(raw_domain.substr(0, domain.size()) == domain);

  const bool valid = is_valid_host_header(host);
  const HostKind kind = classify_host(host, domain);
  const bool shared = is_shared_host(host, domain);
  const SandboxRoute by_host = parse_sandbox_host(host, domain);
  const SandboxRoute by_headers = parse_sandbox_headers(id_header, port_header);
  const SandboxRoute routed = route_request(host, id_header, port_header, domain);
  for (const auto* r : {&by_host, &by_headers, &routed}) check_route_shape(*r);

  // The domain given with or without its port decides the same.
  CHECK(classify_host(host, raw_domain) == kind);
  CHECK(is_shared_host(host, raw_domain) == shared);
  CHECK(parse_sandbox_host(host, raw_domain).error == by_host.error);
  CHECK(route_request(host, id_header, port_header, raw_domain).error == routed.error);

  // Nothing is accepted from a Host outside the grammar; it contains no byte a Host may not hold.
  if (!valid) {
    CHECK(kind == HostKind::unknown);
    CHECK(!shared);
    CHECK(by_host.error == RouteError::invalid_host);
    // Only the plain listener (no domain) routes on the headers alone, whatever the Host.
    const bool headers_alone = domain.empty() && (!id_header.empty() || !port_header.empty());
    if (headers_alone) {
      CHECK(routed.error == by_headers.error && routed.sandbox_id == by_headers.sandbox_id);
    } else {
      CHECK(routed.error == RouteError::invalid_host);
    }
  } else {
    CHECK(!host.empty() && host.size() <= 253 + 1 + 6 + 2);
    for (char c : host) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                c == '.' || c == ':' || c == '[' || c == ']';
      CHECK(ok);
    }
  }

  // The classes do not overlap.
  CHECK(shared == (kind == HostKind::shared));
  if (kind == HostKind::api) {
    CHECK(!domain.empty());
    CHECK(host.size() > 4 && iequals(host.substr(0, 4), "api."));
    CHECK(!by_host.ok());
    CHECK(!routed.ok());  // no headers are honoured on api.<domain> either
  }
  if (by_host.ok()) {
    CHECK(kind == HostKind::sandbox_port);
    check_sandbox_host(host, domain, by_host);
  }
  if (kind == HostKind::shared || kind == HostKind::unknown) CHECK(!by_host.ok());

  if (by_headers.ok()) {
    CHECK(by_headers.sandbox_id == id_header);
    CHECK(decimal(port_header) == by_headers.port);
  }

  // route_request is exactly: without a domain, headers alone when there are any; otherwise
  // grammar, then headers on shared hosts, then the Host.
  const bool has_headers = !id_header.empty() || !port_header.empty();
  if (routed.ok()) {
    CHECK(valid || (domain.empty() && has_headers));
    if (has_headers && (domain.empty() || shared)) {
      CHECK(routed.sandbox_id == by_headers.sandbox_id && routed.port == by_headers.port);
      CHECK(routed.sandbox_id == id_header);
    } else {
      CHECK(routed.sandbox_id == by_host.sandbox_id && routed.port == by_host.port);
      check_sandbox_host(host, domain, routed);
    }
  } else if (valid) {
    const SandboxRoute& expected = has_headers && (domain.empty() || shared) ? by_headers : by_host;
    CHECK(routed.error == expected.error);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view fields[4];
  for (int i = 0; i < 4; ++i) {
    auto nl = i < 3 ? input.find('\n') : std::string_view::npos;
    fields[i] = input.substr(0, nl);
    input = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  }
  check_all(fields[0], fields[1], fields[2], fields[3]);
  check_all(fields[0], fields[1], fields[2], "cove.localhost");
  check_all(fields[0], fields[1], fields[2], "cove.localhost:8443");
  check_all(fields[0], "", "", "cove.localhost");
  return 0;
}
