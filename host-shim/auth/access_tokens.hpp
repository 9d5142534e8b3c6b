#pragma once
// Team access tokens: what E2B's CLI sends as `Authorization: Bearer` (E2B_ACCESS_TOKEN) on the
// template endpoints. "sk_e2b_" + 40 lowercase hex, as E2B's; only a SHA-256 hash is ever stored.
// Each token belongs to one team (E2B's belong to a user, who may be in several teams).
#include <string>
#include <string_view>

namespace cove::shim {

std::string generate_access_token();                  // from the kernel's CSPRNG
bool is_well_formed_access_token(std::string_view token);
std::string hash_access_token(std::string_view token);  // hex SHA-256
std::string mask_access_token(std::string_view token);  // "sk_e2b_1234…cdef"

}  // namespace cove::shim
