#pragma once
// Lexical path cleaning with Go's path.Clean / filepath.Clean rules (envd's and E2B's proxy's
// behaviour both depend on it): collapse slashes, drop ".", resolve ".." lexically.
#include <string>
#include <string_view>

namespace cove::text {

std::string clean_path(std::string_view path);

}  // namespace cove::text
