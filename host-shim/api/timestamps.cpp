#include "api/timestamps.hpp"

#include <cstdio>

namespace cove::shim::api {
namespace {
struct Civil {
  int64_t year;
  unsigned month, day;
};

// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
Civil civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<int64_t>(yoe) + era * 400 + (m <= 2), m, d};
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
}  // namespace

int64_t unix_seconds(TimePoint time) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  return floor_div(ms, 1000);
}

std::string format_rfc3339(TimePoint time) {
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const int64_t secs = floor_div(ms, 1000);
  const int64_t days = floor_div(secs, 86400);
  const int64_t in_day = secs - days * 86400;
  const Civil date = civil_from_days(days);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ",
                static_cast<long long>(date.year), date.month, date.day,
                static_cast<long long>(in_day / 3600), static_cast<long long>(in_day / 60 % 60),
                static_cast<long long>(in_day % 60), static_cast<long long>(ms - secs * 1000));
  return buf;
}

}  // namespace cove::shim::api
