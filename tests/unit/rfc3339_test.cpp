// RFC 3339 timestamps as /init's `timestamp` carries them.
#include <gtest/gtest.h>

#include "system/rfc3339.hpp"

using namespace std::chrono;
using cove::system::parse_rfc3339;

namespace {
// Nanoseconds since the epoch, or a sentinel for "did not parse".
int64_t ns(std::string_view text) {
  auto tp = parse_rfc3339(text);
  if (!tp) return INT64_MIN;
  return duration_cast<nanoseconds>(tp->time_since_epoch()).count();
}
constexpr int64_t kSec = 1000000000;
constexpr int64_t k2026 = 1767225600;  // 2026-01-01T00:00:00Z (date -u -d @1767225600)
}  // namespace

TEST(Rfc3339, UtcZ) {
  EXPECT_EQ(ns("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ns("2026-01-01T00:00:00Z"), k2026 * kSec);
  EXPECT_EQ(ns("2024-02-29T12:00:00Z"), 1709208000 * kSec);  // leap day
  EXPECT_EQ(ns("1969-12-31T23:59:59Z"), -1 * kSec);          // before the epoch
  EXPECT_EQ(ns("2000-03-01T00:00:00Z"), 951868800 * kSec);   // after a 400-year leap day
  EXPECT_EQ(ns("2026-01-01T23:59:59Z"), (k2026 + 86399) * kSec);
}

TEST(Rfc3339, NumericOffsets) {
  EXPECT_EQ(ns("2026-01-01T02:00:00+02:00"), k2026 * kSec);
  EXPECT_EQ(ns("2025-12-31T19:00:00-05:00"), k2026 * kSec);
  EXPECT_EQ(ns("2026-01-01T05:30:00+05:30"), k2026 * kSec);
  EXPECT_EQ(ns("2026-01-01T00:00:00+00:00"), k2026 * kSec);
  EXPECT_EQ(ns("2026-01-01T00:00:00-00:00"), k2026 * kSec);
  EXPECT_EQ(ns("2025-12-31T23:15:00-00:45"), k2026 * kSec);
}

TEST(Rfc3339, Fractions) {
  EXPECT_EQ(ns("2026-01-01T00:00:00.5Z"), k2026 * kSec + 500000000);
  EXPECT_EQ(ns("2026-01-01T00:00:00.123Z"), k2026 * kSec + 123000000);
  EXPECT_EQ(ns("2026-01-01T00:00:00.000123Z"), k2026 * kSec + 123000);
  EXPECT_EQ(ns("2026-01-01T00:00:00.123456789Z"), k2026 * kSec + 123456789);
  EXPECT_EQ(ns("2026-01-01T00:00:00.000000001Z"), k2026 * kSec + 1);
  EXPECT_EQ(ns("2026-01-01T00:00:00.999999999Z"), k2026 * kSec + 999999999);
  EXPECT_EQ(ns("2026-01-01T02:00:00.25+02:00"), k2026 * kSec + 250000000);
  // RFC3339Nano as Go emits it (trailing zeros trimmed) and JS's toISOString (3 digits).
  EXPECT_EQ(ns("2026-01-01T00:00:00.1Z"), k2026 * kSec + 100000000);
  EXPECT_EQ(ns("2026-01-01T00:00:00.100Z"), k2026 * kSec + 100000000);
}

TEST(Rfc3339, InvalidForms) {
  const char* bad[] = {
      "",
      "2026",
      "2026-01-01",
      "2026-01-01T00:00:00",          // zone required
      "2026-01-01 00:00:00Z",         // space separator
      "2026-01-01T00:00Z",            // seconds required
      "2026-1-01T00:00:00Z",
      "2026-01-1T00:00:00Z",
      "2026/01/01T00:00:00Z",
      "2026-01-01T00-00-00Z",
      "2026-13-01T00:00:00Z",
      "2026-00-01T00:00:00Z",
      "2026-01-00T00:00:00Z",
      "2026-01-32T00:00:00Z",
      "2026-01-01T24:00:00Z",
      "2026-01-01T00:60:00Z",
      "2026-01-01T00:00:00.Z",        // dot without digits
      "2026-01-01T00:00:00,5Z",       // comma fraction
      "2026-01-01T00:00:00+0200",     // offset needs a colon
      "2026-01-01T00:00:00+02",
      "2026-01-01T00:00:00+2:00",
      "2026-01-01T00:00:00ZZ",
      "2026-01-01T00:00:00Zjunk",
      "2026-01-01T00:00:00+02:00x",
      " 2026-01-01T00:00:00Z",
      "abcd-01-01T00:00:00Z",
      "\"2026-01-01T00:00:00Z\"",
  };
  for (const char* text : bad) {
    EXPECT_FALSE(parse_rfc3339(text).has_value()) << '"' << text << '"';
  }
}
