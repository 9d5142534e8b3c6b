#pragma once
// Which sandbox port a data-plane request is for: from the E2b-Sandbox-Id / E2b-Sandbox-Port
// headers (the SDK sends both on every envd and code-interpreter request), or from a Host of the
// form <port>-<id>[-suffix].<domain>. Pure functions, E2B's rules (packages/shared/pkg/proxy/host.go).
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

// E2B's sandbox id rule: ^[a-z0-9]+$ (bounded, so a huge header is not an id).
bool is_valid_sandbox_id(std::string_view id);
// 1..65535 in plain decimal digits.
bool parse_port(std::string_view text, uint16_t& port);

// `host` may carry a :port. With a non-empty `domain` the host must be a direct subdomain of it
// (case-insensitive); without one any domain is accepted, as E2B does.
SandboxRoute parse_sandbox_host(std::string_view host, std::string_view domain);

// Either header may be empty (absent); both empty gives missing_header.
SandboxRoute parse_sandbox_headers(std::string_view id_header, std::string_view port_header);

// The shared host `sandbox.<domain>`, localhost or a loopback address: where the headers route.
bool is_shared_host(std::string_view host, std::string_view domain);

// The full decision: headers when present and the Host allows them (or always, when no domain is
// configured: the plain-HTTP sandbox listener has no host names), otherwise the Host.
SandboxRoute route_request(std::string_view host, std::string_view id_header,
                           std::string_view port_header, std::string_view domain);

// The plain-text 400 body E2B sends for each error (without the trailing newline).
std::string_view route_error_text(RouteError error);

}  // namespace cove::shim::edge
