#pragma once
// Standard base64 (Go's StdEncoding): the agent's Basic auth and signatures, the shim's Connect
// JSON bytes fields.
#include <optional>
#include <string>
#include <string_view>

namespace cove::text {

// Padding required; nullopt on malformed input.
std::optional<std::string> base64_decode(std::string_view in);
std::string base64_encode(std::string_view in);

}  // namespace cove::text
