#include "auth/prefixed_secrets.hpp"

#include <openssl/evp.h>

#include <stdexcept>

#include "auth/random.hpp"

namespace cove::shim {
namespace {
constexpr size_t kSecretBytes = 20;  // 40 hex digits, as E2B's
constexpr std::string_view kEllipsis = "\u2026";
}  // namespace

std::string generate_prefixed_secret(std::string_view prefix) {
  return std::string(prefix) + to_hex(random_bytes(kSecretBytes));
}

bool is_well_formed_prefixed_secret(std::string_view secret, std::string_view prefix) {
  if (secret.size() != prefix.size() + 2 * kSecretBytes || !secret.starts_with(prefix)) return false;
  for (char c : secret.substr(prefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  return to_hex(std::string_view(reinterpret_cast<const char*>(digest), len));
}

std::string mask_prefixed_secret(std::string_view secret, std::string_view prefix) {
  // Shows the prefix, 4 leading and 4 trailing secret digits: 32 of 40 digits stay hidden.
  if (secret.size() < prefix.size() + 2 * kSecretBytes) {
    return std::string(secret.starts_with(prefix) ? prefix : "") + std::string(kEllipsis);
  }
  return std::string(secret.substr(0, prefix.size() + 4)) + std::string(kEllipsis) +
         std::string(secret.substr(secret.size() - 4));
}

}  // namespace cove::shim
