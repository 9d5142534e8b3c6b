#pragma once
// Which sandbox port a data-plane request is for: from the E2b-Sandbox-Id / E2b-Sandbox-Port
// headers (the SDK sends both on every envd and code-interpreter request), or from a Host of the
// form <port>-<id>[-suffix].<domain>. Pure functions, E2B's rules (packages/shared/pkg/proxy/host.go),
// with a stricter Host grammar: nothing is looked up for a Host that is not a clean authority.
//
// Grammar (checked before anything else; failing it is RouteError::invalid_host):
//   host     = name | IPv4 | "[" IPv6 "]", then optionally ":" port
//   name     = LDH labels (letters, digits, '-', not at either end of a label), 1-63 characters each,
//              at most 253 in all, one optional trailing dot; the last label is not all digits
//              (that would be a malformed IPv4 address)
//   IPv4     = four dotted decimals 0-255 without leading zeros
//   IPv6     = what inet_pton accepts; no zone ("%eth0")
//   port     = see parse_port
// So no userinfo, spaces, control bytes, empty labels, percent-escapes or bare IPv6.
//
// `domain` is everywhere the configured domain WITHOUT a :port ("cove.localhost"); a ":<digits>"
// suffix is nevertheless ignored (domain_host) so a config value passed as is still works.
#include <cstdint>
#include <string>
#include <string_view>

namespace cove::shim::edge {

enum class RouteError { none, missing_header, invalid_host, invalid_port, invalid_id };

struct SandboxRoute {
  RouteError error = RouteError::none;
  std::string sandbox_id;
  uint16_t port = 0;
  bool ok() const { return error == RouteError::none; }
};

// E2B's sandbox id rule: ^[a-z0-9]+$, at most 128 characters (so a huge header is not an id).
bool is_valid_sandbox_id(std::string_view id);
// 1..65535 in 1 to 5 decimal digits, nothing else (no sign, no spaces). Leading zeros are accepted
// ("08000" is 8000), as E2B's strconv.ParseUint does; the 5-digit cap refuses "008000", which no
// client produces (they print the port as a plain number).
bool parse_port(std::string_view text, uint16_t& port);

// "cove.localhost:8443" → "cove.localhost"; a domain without a port is returned unchanged.
std::string_view domain_host(std::string_view domain);

// The grammar above: whether a Host header value may be routed at all.
bool is_valid_host_header(std::string_view host);

// What a Host names, for the TLS edge's first decision. Any case, optional trailing dot, optional
// :port; a Host failing the grammar is `unknown`.
//   api           api.<domain>
//   shared        sandbox.<domain>, localhost, a loopback address (routed by the headers)
//   sandbox_port  <label>.<domain> with a '-' in the label (parse_sandbox_host decides validity)
//   unknown       anything else
// With an empty domain only `shared` and `sandbox_port` (any parent domain) can result.
enum class HostKind { api, sandbox_port, shared, unknown };
HostKind classify_host(std::string_view host, std::string_view domain);

// `host` may carry a :port. With a non-empty `domain` the host must be a direct subdomain of it
// (case-insensitive); without one any domain is accepted, as E2B does. The id is case-sensitive.
SandboxRoute parse_sandbox_host(std::string_view host, std::string_view domain);

// Either header may be empty (absent); both empty gives missing_header.
SandboxRoute parse_sandbox_headers(std::string_view id_header, std::string_view port_header);

// The shared host `sandbox.<domain>`, localhost or a loopback address: where the headers route.
bool is_shared_host(std::string_view host, std::string_view domain);

// The full decision: an invalid Host is refused first; then the headers when present and the Host
// allows them (or always, when no domain is configured: the plain-HTTP sandbox listener has no
// host names), otherwise the Host.
SandboxRoute route_request(std::string_view host, std::string_view id_header,
                           std::string_view port_header, std::string_view domain);

// The plain-text 400 body E2B sends for each error (without the trailing newline).
std::string_view route_error_text(RouteError error);

}  // namespace cove::shim::edge
