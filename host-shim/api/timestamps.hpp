#pragma once
// RFC 3339 timestamps in UTC with millisecond fractions ("2024-05-06T07:08:09.123Z"): what the
// SDK turns into a Date (millisecond precision, so finer digits would carry nothing).
#include <string>

#include "store/records.hpp"

namespace cove::shim::api {

std::string format_rfc3339(TimePoint time);
int64_t unix_seconds(TimePoint time);

}  // namespace cove::shim::api
