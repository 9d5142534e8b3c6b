#include <gtest/gtest.h>

#include "interpreter/ndjson.hpp"

namespace cove::interpreter {
namespace {

using Json = nlohmann::ordered_json;

TEST(Ndjson, OneLineEndingInNewlineEvenForMultilineText) {
  std::string line = ndjson_line(Json{{"type", "stdout"}, {"text", "a\nb\n\n"}});
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(line, "{\"type\":\"stdout\",\"text\":\"a\\nb\\n\\n\"}\n");
}

TEST(Ndjson, NonAsciiIsEscapedSoChunkSplitsCannotCorruptIt) {
  std::string line = ndjson_line(Json{{"text", "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80"}});
  for (unsigned char c : line) EXPECT_LT(c, 0x80);
  EXPECT_NE(line.find("h\\u00e9llo"), std::string::npos);
  EXPECT_NE(line.find("\\u2713"), std::string::npos);
  EXPECT_NE(line.find("\\ud83d\\ude00"), std::string::npos);  // surrogate pair, as json.dumps
  EXPECT_EQ(Json::parse(line)["text"], "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80");
}

TEST(Ndjson, InvalidUtf8BecomesReplacementCharacterNotAnException) {
  std::string line;
  ASSERT_NO_THROW(line = ndjson_line(Json{{"text", std::string("a\xff\xfe" "b")}}));
  EXPECT_NE(line.find("\\ufffd"), std::string::npos);
  EXPECT_EQ(line.find('\xff'), std::string::npos);
}

}  // namespace
}  // namespace cove::interpreter
