#pragma once
// What /init configures: sandbox-wide environment variables, the access token, the default user
// and workdir. Internal variables (E2B_SANDBOX, ...) are never overwritten by /init.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cove::system {

struct InitRequest {
  std::optional<std::map<std::string, std::string>> env_vars;
  std::optional<std::string> access_token;
  std::optional<std::chrono::system_clock::time_point> timestamp;
  std::optional<std::string> default_user;
  std::optional<std::string> default_workdir;
  // The request's X-Access-Token header. Holding the current token authorises replacing it: a
  // sandbox restored from another's snapshot is handed its own token this way.
  std::optional<std::string> presented_token;
};

enum class InitOutcome { applied, stale, unauthorized_reset, token_mismatch };

class AgentState {
 public:
  AgentState();

  // Validates and applies /init (envd.md §3, without MMDS). A request with an older timestamp
  // than one already applied is stale: acknowledged, not applied.
  InitOutcome apply_init(const InitRequest& request);

  // Constant-time comparison against the token; false when none is set.
  bool token_matches(std::string_view candidate) const;
  bool has_token() const { return access_token_.has_value(); }
  // The token itself, for signing /files URLs; empty when none is set.
  std::string_view access_token() const { return access_token_ ? std::string_view(*access_token_) : std::string_view(); }

  const std::string& default_user() const { return default_user_; }
  const std::optional<std::string>& default_workdir() const { return default_workdir_; }

  // Internal variables overlaid with /init's envVars (internal ones win).
  std::map<std::string, std::string> global_env() const;
  void set_internal_env(const std::string& key, const std::string& value) { internal_env_[key] = value; }

 private:
  std::map<std::string, std::string> internal_env_;
  std::map<std::string, std::string> user_env_;
  std::optional<std::string> access_token_;
  std::string default_user_ = "root";
  std::optional<std::string> default_workdir_;
  std::optional<std::chrono::system_clock::time_point> last_timestamp_;
};

}  // namespace cove::system
