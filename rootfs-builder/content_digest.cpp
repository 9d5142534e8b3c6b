#include "rootfs-builder/content_digest.hpp"

#include <stdexcept>

namespace cove::builder {

bool valid_sha256_digest(std::string_view digest) {
  constexpr std::string_view kPrefix = "sha256:";
  if (digest.size() != kPrefix.size() + 64 || digest.substr(0, kPrefix.size()) != kPrefix) return false;
  for (char c : digest.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Sha256Digest::Sha256Digest() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("sha256 unavailable");
}

void Sha256Digest::update(const void* data, size_t size) {
  if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) throw std::runtime_error("sha256 failed");
}

std::string Sha256Digest::finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), md, &len) != 1) throw std::runtime_error("sha256 failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::string sha256_digest_of(std::string_view bytes) {
  Sha256Digest d;
  d.update(bytes.data(), bytes.size());
  return d.finish();
}

}  // namespace cove::builder
