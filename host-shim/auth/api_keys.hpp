#pragma once
// E2B API keys: "e2b_" + 40 lowercase hex. Only a SHA-256 hash is ever stored.
#include <optional>
#include <string>
#include <string_view>

namespace cove::shim {

std::string generate_api_key();                  // from the kernel's CSPRNG
bool is_well_formed_api_key(std::string_view key);
std::string hash_api_key(std::string_view key);  // hex SHA-256
std::string mask_api_key(std::string_view key);  // "e2b_1234…cdef"

}  // namespace cove::shim
