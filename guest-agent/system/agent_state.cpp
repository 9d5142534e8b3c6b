#include "system/agent_state.hpp"

#include <openssl/crypto.h>

namespace cove::system {

AgentState::AgentState() { internal_env_["E2B_SANDBOX"] = "true"; }

bool AgentState::token_matches(std::string_view candidate) const {
  if (!access_token_ || candidate.size() != access_token_->size()) return false;
  return CRYPTO_memcmp(candidate.data(), access_token_->data(), candidate.size()) == 0;
}

InitOutcome AgentState::apply_init(const InitRequest& request) {
  // Without a metadata service, only the holder of the current token may change or clear it;
  // the first /init (no token yet) sets it up.
  if (access_token_) {
    const bool presented = request.presented_token && token_matches(*request.presented_token);
    if (!request.access_token && !presented) return InitOutcome::unauthorized_reset;
    if (!presented && !token_matches(*request.access_token)) return InitOutcome::token_mismatch;
  }
  if (request.timestamp) {
    if (last_timestamp_ && *request.timestamp <= *last_timestamp_) return InitOutcome::stale;
    last_timestamp_ = request.timestamp;
  }
  if (request.env_vars) user_env_ = *request.env_vars;
  access_token_ = request.access_token;
  if (request.default_user && !request.default_user->empty()) default_user_ = *request.default_user;
  if (request.default_workdir && !request.default_workdir->empty()) default_workdir_ = request.default_workdir;
  return InitOutcome::applied;
}

std::map<std::string, std::string> AgentState::global_env() const {
  std::map<std::string, std::string> env = user_env_;
  for (const auto& [k, v] : internal_env_) env[k] = v;
  return env;
}

}  // namespace cove::system
