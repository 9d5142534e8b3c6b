#pragma once
// Per-sandbox secrets derived from the node's seed (E2B's scheme): envd access token =
// hex(HMAC-SHA256(seed, id)), traffic token = hex(HMAC-SHA256(seed, "sandbox-traffic-" + id)).
// Derived, so nothing secret is stored per sandbox and a restart regenerates the same values.
#include <string>
#include <string_view>

namespace cove::shim {

class TokenIssuer {
 public:
  explicit TokenIssuer(std::string seed) : seed_(std::move(seed)) {}
  // Reads <state_dir>/seed, creating it (32 random bytes, mode 0600) on first use.
  static TokenIssuer from_state_dir(const std::string& state_dir);

  std::string envd_access_token(std::string_view sandbox_id) const;
  std::string traffic_access_token(std::string_view sandbox_id) const;

 private:
  std::string seed_;
};

// Constant-time comparison for secrets.
bool secrets_equal(std::string_view a, std::string_view b);

}  // namespace cove::shim
