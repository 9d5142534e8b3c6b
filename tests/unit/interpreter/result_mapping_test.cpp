#include <gtest/gtest.h>

#include "interpreter/result_mapping.hpp"

namespace cove::interpreter {
namespace {

using Json = nlohmann::json;

TEST(ResultMapping, KnownMimeTypesBecomeFieldsTheRestExtra) {
  Json bundle = {
      {"text/plain", "<Figure size 640x480 with 1 Axes>"},
      {"text/html", "<b>x</b>"},
      {"text/markdown", "# x"},
      {"image/svg+xml", "<svg/>"},
      {"image/png", "iVBOR"},
      {"image/jpeg", "/9j/"},
      {"application/pdf", "JVBER"},
      {"text/latex", "$x$"},
      {"application/json", {{"a", 1}}},
      {"application/javascript", "alert(1)"},
      {"e2b/data", {{"a", {1, 2}}}},
      {"e2b/chart", {{"type", "line"}, {"x_label", nullptr}}},
      {"application/vnd.plotly.v1+json", {{"data", Json::array()}}},
  };
  auto line = result_line(bundle, true);
  EXPECT_EQ(line["type"], "result");
  EXPECT_EQ(line["text"], "<Figure size 640x480 with 1 Axes>");
  EXPECT_EQ(line["html"], "<b>x</b>");
  EXPECT_EQ(line["markdown"], "# x");
  EXPECT_EQ(line["svg"], "<svg/>");
  EXPECT_EQ(line["png"], "iVBOR");
  EXPECT_EQ(line["jpeg"], "/9j/");
  EXPECT_EQ(line["pdf"], "JVBER");
  EXPECT_EQ(line["latex"], "$x$");
  EXPECT_EQ(line["json"]["a"], 1);
  EXPECT_EQ(line["javascript"], "alert(1)");
  EXPECT_EQ(line["data"]["a"][1], 2);
  EXPECT_EQ(line["chart"]["type"], "line");
  ASSERT_TRUE(line["chart"].contains("x_label"));  // nested nulls stay
  EXPECT_TRUE(line["chart"]["x_label"].is_null());
  EXPECT_EQ(line["extra"].size(), 1u);
  EXPECT_TRUE(line["extra"].contains("application/vnd.plotly.v1+json"));
  EXPECT_EQ(line["is_main_result"], true);
  // Nothing but the known keys at the top level (the JS SDK would turn others into extra).
  EXPECT_EQ(line.size(), 15u);
}

TEST(ResultMapping, AbsentFieldsAreOmittedExtraAndIsMainAlwaysPresent) {
  auto line = result_line(Json{{"text/plain", "2"}}, false);
  EXPECT_EQ(line.size(), 4u);
  EXPECT_EQ(line["text"], "2");
  EXPECT_EQ(line["extra"], nlohmann::ordered_json::object());
  EXPECT_EQ(line["is_main_result"], false);
  auto empty = result_line(Json::object(), true);
  EXPECT_EQ(empty.size(), 3u);
}

TEST(ResultMapping, JsonListStaysAList) {
  auto line = result_line(Json{{"text/plain", "[1, 2]"}, {"application/json", {1, 2}}}, true);
  ASSERT_TRUE(line["json"].is_array());
  EXPECT_EQ(line["json"].size(), 2u);
}

TEST(ResultMapping, TextAsListOfLinesIsJoined) {
  auto line = result_line(Json{{"text/plain", {"a\n", "b"}}}, true);
  EXPECT_EQ(line["text"], "a\nb");
}

TEST(ResultMapping, MatchingQuotesAreStrippedFromText) {
  EXPECT_EQ(strip_matching_quotes("'hello'"), "hello");
  EXPECT_EQ(strip_matching_quotes("\"hello\""), "hello");
  EXPECT_EQ(strip_matching_quotes("'hello\""), "'hello\"");
  EXPECT_EQ(strip_matching_quotes("'"), "'");
  EXPECT_EQ(strip_matching_quotes("''"), "");
  EXPECT_EQ(strip_matching_quotes("2"), "2");
  EXPECT_EQ(result_line(Json{{"text/plain", "'/home/user'"}}, true)["text"], "/home/user");
  // Only text is stripped.
  EXPECT_EQ(result_line(Json{{"text/html", "'x'"}}, true)["html"], "'x'");
}

TEST(ResultMapping, NonObjectBundleGivesAnEmptyResult) {
  auto line = result_line(Json::array({1}), true);
  EXPECT_EQ(line.size(), 3u);
}

}  // namespace
}  // namespace cove::interpreter
