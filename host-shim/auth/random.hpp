#pragma once
// Bytes and identifiers from the kernel's CSPRNG (getrandom), for keys, seeds and ids.
#include <cstddef>
#include <string>
#include <string_view>

namespace cove::shim {

std::string random_bytes(size_t n);
// n characters of [a-z0-9], uniformly distributed (rejection sampling, no modulo bias).
std::string random_lowercase_alnum(size_t n);
std::string to_hex(std::string_view bytes);  // lowercase

}  // namespace cove::shim
