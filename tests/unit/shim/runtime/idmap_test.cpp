#include <gtest/gtest.h>

#include "runtime/container/idmap.hpp"

namespace cove::shim::container {

TEST(IdMap, SlotRanges) {
  EXPECT_EQ(host_base_for_slot(0), 100000u);
  EXPECT_EQ(host_base_for_slot(1), 165536u);
  EXPECT_EQ(host_base_for_slot(1000), 100000u + 1000u * 65536u);
  // Neighbouring slots never overlap.
  EXPECT_EQ(host_base_for_slot(7) + kIdRangeSize, host_base_for_slot(8));
}

TEST(IdMap, RefusesRangesOutsideTheUidSpace) {
  EXPECT_THROW(host_base_for_slot(-1), std::out_of_range);
  // (2^32 - 1 - 100000) / 65536 = 65534.47…: slot 65533 still fits entirely, 65534 would reach
  // the invalid id 2^32-1.
  EXPECT_NO_THROW(host_base_for_slot(65533));
  EXPECT_THROW(host_base_for_slot(65534), std::out_of_range);
  EXPECT_THROW(host_base_for_slot(int64_t{1} << 40), std::out_of_range);
}

TEST(IdMap, MapLine) {
  EXPECT_EQ(id_map_line(100000), "0 100000 65536\n");
  EXPECT_EQ(id_map_line(165536, 10), "0 165536 10\n");
}

}  // namespace cove::shim::container
