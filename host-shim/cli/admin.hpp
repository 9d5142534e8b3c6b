#pragma once
// The operator's door: a Unix socket (mode 0600, root only) in the state directory through which
// `cove sandbox list|kill` reach the running shim, across every team, and `cove template build`
// builds built-in templates.
#include <string>
#include <utility>

#include "http/server.hpp"
#include "lifecycle/sandbox_manager.hpp"
#include "lifecycle/template_service.hpp"

namespace cove::shim {

std::string admin_socket_path(const std::string& state_dir);

http::Handler make_admin_handler(SandboxManager& manager, TemplateService& templates);

// One request to the admin socket; returns {status, body}. Throws std::runtime_error when the
// shim is not running.
std::pair<unsigned, std::string> admin_request(const std::string& state_dir, const std::string& method,
                                               const std::string& target, const std::string& body = "");

}  // namespace cove::shim
