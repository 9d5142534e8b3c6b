#pragma once
// envd's signed /files URLs (envd.md §1): "v1_" + unpadded standard base64 of
// SHA-256(path ":" op ":" username ":" token [":" expiration]), checked only when a token is set.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cove::files {

enum class SignOp { read, write };  // GET /files reads, POST /files writes

std::string compute_signature(std::string_view path, SignOp op, std::string_view username,
                              std::string_view token, std::optional<std::int64_t> expiration);

struct SignatureInput {
  std::string_view header_token;          // X-Access-Token; empty means absent
  const std::string* signature = nullptr;  // `signature` query value, null when absent
  std::optional<std::int64_t> expiration;  // parsed `signature_expiration`
  std::string_view path;                  // raw `path` query value ("" when absent)
  std::string_view username;              // raw `username` query value ("" when absent)
};

// Empty when the request may proceed, else envd's 401 message. The header token, when present,
// decides alone; otherwise the signature must match (constant time), and only then is the
// expiry checked (a value equal to `now` is still valid).
std::string verify_signature(const SignatureInput& in, std::string_view token, SignOp op, std::int64_t now_unix);

// The generated wrapper's parse of `signature_expiration` (a Go int). On failure `error` holds
// the text/plain 400 body line: "Invalid format for parameter signature_expiration: ...".
struct ExpirationParam {
  std::optional<std::int64_t> value;
  std::string error;
};
ExpirationParam parse_signature_expiration(const std::optional<std::string>& raw);

}  // namespace cove::files
