#include <gtest/gtest.h>

#include <set>
#include <string>

#include "interpreter/resources.hpp"

namespace cove::interpreter {
namespace {

TEST(InterpreterResources, PathsAreRelativeUniqueAndContentNonEmpty) {
  ASSERT_FALSE(resources().empty());
  std::set<std::string> seen;
  for (const auto& r : resources()) {
    EXPECT_FALSE(r.path.empty());
    EXPECT_NE(r.path.front(), '/') << r.path;
    EXPECT_EQ(r.path.find(".."), std::string_view::npos) << r.path;
    EXPECT_FALSE(r.content.empty()) << r.path;
    EXPECT_TRUE(seen.insert(std::string(r.path)).second) << r.path;
  }
}

}  // namespace
}  // namespace cove::interpreter
