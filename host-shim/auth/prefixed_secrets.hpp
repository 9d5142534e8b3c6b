#pragma once
// Credentials of E2B's shape: a fixed prefix + 40 lowercase hex digits from the kernel's CSPRNG
// (API keys "e2b_…", access tokens "sk_e2b_…"). Only the hex SHA-256 of the whole secret is ever
// stored; a mask identifies one in listings without revealing it.
#include <string>
#include <string_view>

namespace cove::shim {

std::string generate_prefixed_secret(std::string_view prefix);
bool is_well_formed_prefixed_secret(std::string_view secret, std::string_view prefix);
std::string sha256_hex(std::string_view data);
// "<prefix>1234…cdef"; anything shorter than a real secret shows none of its characters.
std::string mask_prefixed_secret(std::string_view secret, std::string_view prefix);

}  // namespace cove::shim
