#pragma once
// OCI content digests ("sha256:<64 hex>"): everything a registry sends is checked against the
// digest that named it, so a registry (or whatever sits between) cannot substitute content.
#include <openssl/evp.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace cove::builder {

// "sha256:" followed by 64 lowercase hex digits; other algorithms are not accepted.
bool valid_sha256_digest(std::string_view digest);

// Streaming SHA-256 that ends in an OCI digest string.
class Sha256Digest {
 public:
  Sha256Digest();
  void update(const void* data, size_t size);
  std::string finish();  // "sha256:<hex>"; call once

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

std::string sha256_digest_of(std::string_view bytes);

}  // namespace cove::builder
