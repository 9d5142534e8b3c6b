#pragma once
// Lifecycle failures, in terms the API maps to E2B's `{code, message}` (code = HTTP status).
#include <stdexcept>
#include <string>

namespace cove::shim {

enum class LifecycleErrc {
  bad_request = 400,
  unauthorized = 401,
  not_found = 404,
  conflict = 409,
  too_many = 429,
  internal = 500,
  unavailable = 503,
};

struct LifecycleError : std::runtime_error {
  LifecycleError(LifecycleErrc code, const std::string& message)
      : std::runtime_error(message), code(code) {}
  LifecycleErrc code;
  int status() const { return static_cast<int>(code); }
};

// E2B's message for an unknown (or another team's) sandbox.
inline std::string sandbox_not_found_message(const std::string& id) {
  return "Sandbox \"" + id + "\" doesn't exist or you don't have access to it";
}

}  // namespace cove::shim
