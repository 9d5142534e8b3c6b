#pragma once
// `Authorization: Basic base64("<user>:")` as Go's Request.BasicAuth parses it.
#include <optional>
#include <string>
#include <string_view>

#include "text/base64.hpp"

namespace cove::system {

// The username, or nullopt when the header is absent or not well-formed Basic credentials
// (envd then falls back to the default user).
std::optional<std::string> basic_auth_username(std::string_view header);

using text::base64_decode;
using text::base64_encode;

}  // namespace cove::system
