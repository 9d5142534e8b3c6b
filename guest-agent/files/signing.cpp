#include "files/signing.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <limits>

#include "system/go_errors.hpp"
#include "system/basic_auth.hpp"

namespace cove::files {

std::string compute_signature(std::string_view path, SignOp op, std::string_view username,
                              std::string_view token, std::optional<std::int64_t> expiration) {
  std::string raw;
  raw.reserve(path.size() + username.size() + token.size() + 32);
  raw.append(path).append(":").append(op == SignOp::read ? "read" : "write").append(":");
  raw.append(username).append(":").append(token);
  if (expiration) raw.append(":").append(std::to_string(*expiration));
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(raw.data()), raw.size(), digest);
  OPENSSL_cleanse(raw.data(), raw.size());
  std::string b64 = system::base64_encode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  return "v1_" + b64;
}

std::string verify_signature(const SignatureInput& in, std::string_view token, SignOp op, std::int64_t now_unix) {
  if (!in.header_token.empty()) {
    bool same = in.header_token.size() == token.size() &&
                CRYPTO_memcmp(in.header_token.data(), token.data(), token.size()) == 0;
    return same ? std::string() : "access token present in header but does not match";
  }
  if (in.signature == nullptr) return "missing signature query parameter";
  std::string expected = compute_signature(in.path, op, in.username, token, in.expiration);
  const std::string& given = *in.signature;
  if (given.size() != expected.size() || CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0) {
    return "invalid signature";
  }
  if (in.expiration && *in.expiration < now_unix) return "signature is already expired";
  return {};
}

ExpirationParam parse_signature_expiration(const std::optional<std::string>& raw) {
  ExpirationParam out;
  if (!raw) return out;
  const std::string& s = *raw;
  auto fail = [&](std::string_view why) {
    out.error = "Invalid format for parameter signature_expiration: error binding string parameter: "
                "strconv.ParseInt: parsing " + system::go_quote(s) + ": " + std::string(why);
    return out;
  };
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i == s.size()) return fail("invalid syntax");
  // Accumulate as a negative number so INT64_MIN is representable.
  std::int64_t value = 0;
  bool overflow = false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return fail("invalid syntax");
    int d = s[i] - '0';
    if (value < (std::numeric_limits<std::int64_t>::min() + d) / 10) {
      overflow = true;
      continue;
    }
    value = value * 10 - d;
  }
  if (overflow || (!negative && value == std::numeric_limits<std::int64_t>::min())) return fail("value out of range");
  out.value = negative ? value : -value;
  return out;
}

}  // namespace cove::files
