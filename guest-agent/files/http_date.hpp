#pragma once
// HTTP dates (RFC 9110 §5.6.7) as Go's net/http writes and reads them: written as IMF-fixdate
// ("Mon, 02 Jan 2006 15:04:05 GMT"); read in IMF-fixdate, RFC 850 and asctime forms.
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace cove::files {

std::string format_http_date(std::time_t t);
std::optional<std::time_t> parse_http_date(std::string_view s);

}  // namespace cove::files
