#include <gtest/gtest.h>

#include "api/timestamps.hpp"

namespace cove::shim::api {
namespace {
using namespace std::chrono;

TEST(Timestamps, FormatsUtcWithMilliseconds) {
  EXPECT_EQ(format_rfc3339(TimePoint{}), "1970-01-01T00:00:00.000Z");
  // 2024-02-29T23:59:58.123456Z (leap day); sub-millisecond digits are cut, not rounded.
  TimePoint t = TimePoint(seconds(1709251198)) + microseconds(123456);
  EXPECT_EQ(format_rfc3339(t), "2024-02-29T23:59:58.123Z");
  EXPECT_EQ(unix_seconds(t), 1709251198);
  EXPECT_EQ(format_rfc3339(TimePoint(seconds(951782400))), "2000-02-29T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(TimePoint(seconds(4102444799))), "2099-12-31T23:59:59.000Z");
}

TEST(Timestamps, BeforeTheEpochRoundsDown) {
  TimePoint t = TimePoint(milliseconds(-1));
  EXPECT_EQ(format_rfc3339(t), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(unix_seconds(t), -1);
}

}  // namespace
}  // namespace cove::shim::api
