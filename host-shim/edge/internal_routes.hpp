#pragma once
// envd routes reserved for the control plane (/init, /freeze, ...): E2B's orchestrator proxy
// answers them with 404 on port 49983 so nobody reaches them through the sandbox URL
// (pkg/sandbox/envd/internal_routes.go). The check runs on the decoded, cleaned path, a superset
// of what envd itself would route, so escapes and dot segments cannot sneak past it.
#include <optional>
#include <string>
#include <string_view>

#include "text/clean_path.hpp"

namespace cove::shim::edge {

// The path of a request target (origin-form or absolute-form), percent-decoded as Go's
// URL.Path ('+' stays '+'). nullopt on a malformed escape.
std::optional<std::string> request_path(std::string_view target);

// Go's path.Clean: one slash between elements, no "." elements, ".." resolved, rooted paths stay
// rooted; "" becomes ".".
using text::clean_path;

// `decoded_path` as request_path returns it.
bool is_envd_internal_path(std::string_view decoded_path);

}  // namespace cove::shim::edge
