#include "auth/api_keys.hpp"

#include <openssl/evp.h>

#include <stdexcept>

#include "auth/random.hpp"

namespace cove::shim {
namespace {
constexpr std::string_view kPrefix = "e2b_";
constexpr size_t kSecretBytes = 20;  // 40 hex digits, as E2B's keys
constexpr size_t kKeyLength = kPrefix.size() + 2 * kSecretBytes;
constexpr std::string_view kEllipsis = "\u2026";
}  // namespace

std::string generate_api_key() { return std::string(kPrefix) + to_hex(random_bytes(kSecretBytes)); }

bool is_well_formed_api_key(std::string_view key) {
  if (key.size() != kKeyLength || !key.starts_with(kPrefix)) return false;
  for (char c : key.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string hash_api_key(std::string_view key) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(key.data(), key.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  return to_hex(std::string_view(reinterpret_cast<const char*>(digest), len));
}

std::string mask_api_key(std::string_view key) {
  // Shows the prefix, 4 leading and 4 trailing secret digits: 32 of 40 digits stay hidden.
  // Anything shorter than a real key shows no secret characters at all.
  if (key.size() < kKeyLength) {
    return std::string(key.starts_with(kPrefix) ? kPrefix : "") + std::string(kEllipsis);
  }
  return std::string(key.substr(0, kPrefix.size() + 4)) + std::string(kEllipsis) +
         std::string(key.substr(key.size() - 4));
}

}  // namespace cove::shim
