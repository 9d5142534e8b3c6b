#pragma once
// The opaque `nextToken` of the v2 list: the (startedAt, id) of the last item of a page, from
// which the next page continues. Clients echo it; anything they change is rejected, not trusted.
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "store/records.hpp"

namespace cove::shim {

std::string encode_page_token(TimePoint started_at, std::string_view id);
std::optional<std::pair<TimePoint, std::string>> decode_page_token(std::string_view token);

}  // namespace cove::shim
