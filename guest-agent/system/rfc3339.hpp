#pragma once
// RFC 3339 timestamps as Go's time.Time JSON unmarshalling accepts them (fraction optional,
// `Z` or a numeric offset).
#include <chrono>
#include <optional>
#include <string_view>

namespace cove::system {

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);

}  // namespace cove::system
