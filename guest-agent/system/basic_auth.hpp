#pragma once
// `Authorization: Basic base64("<user>:")` as Go's Request.BasicAuth parses it.
#include <optional>
#include <string>
#include <string_view>

namespace cove::system {

// The username, or nullopt when the header is absent or not well-formed Basic credentials
// (envd then falls back to the default user).
std::optional<std::string> basic_auth_username(std::string_view header);

// Standard base64 with padding required (Go's StdEncoding); nullopt on malformed input.
std::optional<std::string> base64_decode(std::string_view in);
std::string base64_encode(std::string_view in);

}  // namespace cove::system
