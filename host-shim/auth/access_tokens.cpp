#include "auth/access_tokens.hpp"

#include "auth/prefixed_secrets.hpp"

namespace cove::shim {
namespace {
constexpr std::string_view kPrefix = "sk_e2b_";
}  // namespace

std::string generate_access_token() { return generate_prefixed_secret(kPrefix); }
bool is_well_formed_access_token(std::string_view token) { return is_well_formed_prefixed_secret(token, kPrefix); }
std::string hash_access_token(std::string_view token) { return sha256_hex(token); }
std::string mask_access_token(std::string_view token) { return mask_prefixed_secret(token, kPrefix); }

}  // namespace cove::shim
