#include "auth/api_keys.hpp"

#include "auth/prefixed_secrets.hpp"

namespace cove::shim {
namespace {
constexpr std::string_view kPrefix = "e2b_";
}  // namespace

std::string generate_api_key() { return generate_prefixed_secret(kPrefix); }
bool is_well_formed_api_key(std::string_view key) { return is_well_formed_prefixed_secret(key, kPrefix); }
std::string hash_api_key(std::string_view key) { return sha256_hex(key); }
std::string mask_api_key(std::string_view key) { return mask_prefixed_secret(key, kPrefix); }

}  // namespace cove::shim
