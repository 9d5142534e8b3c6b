#include "config/toml.hpp"

#include <gtest/gtest.h>

namespace cove::shim::toml {
namespace {

const Value& at(const Value& table, std::string_view key) {
  const Value* v = table.find(key);
  if (!v) throw std::runtime_error("missing key " + std::string(key));
  return *v;
}

// The line a parse error names, or 0 if the text parsed.
int error_line(std::string_view text, std::string* message = nullptr) {
  try {
    parse(text);
  } catch (const ParseError& e) {
    if (message) *message = e.what();
    return e.line;
  }
  return 0;
}

void expect_error(std::string_view text, int line, std::string_view fragment) {
  std::string message;
  EXPECT_EQ(error_line(text, &message), line) << text;
  EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message;
  EXPECT_EQ(message.rfind("line " + std::to_string(line) + ": ", 0), 0u) << message;
}

TEST(Toml, EmptyAndCommentOnlyDocuments) {
  EXPECT_TRUE(parse("").keys.empty());
  EXPECT_TRUE(parse("# just a comment\n\n   \t\n# another").keys.empty());
}

TEST(Toml, KeysValuesAndLines) {
  auto doc = parse(
      "# header comment\n"
      "name = \"cove\"   # trailing comment\n"
      "\"quoted key\" = 'literal \\n stays'\n"
      "'lit-key' = true\n"
      "bare_key-2 = false\n"
      "count = 1_000\n"
      "neg = -42\n"
      "pos = +7\n"
      "zero = 0\n");
  EXPECT_EQ(doc.keys, (std::vector<std::string>{"name", "quoted key", "lit-key", "bare_key-2", "count", "neg",
                                                "pos", "zero"}));
  EXPECT_EQ(at(doc, "name").string, "cove");
  EXPECT_EQ(at(doc, "name").line, 2);
  EXPECT_EQ(at(doc, "quoted key").string, "literal \\n stays");
  EXPECT_TRUE(at(doc, "lit-key").boolean);
  EXPECT_EQ(at(doc, "lit-key").kind, Value::Kind::boolean);
  EXPECT_FALSE(at(doc, "bare_key-2").boolean);
  EXPECT_EQ(at(doc, "count").integer, 1000);
  EXPECT_EQ(at(doc, "neg").integer, -42);
  EXPECT_EQ(at(doc, "pos").integer, 7);
  EXPECT_EQ(at(doc, "zero").integer, 0);
  EXPECT_EQ(at(doc, "zero").line, 9);
}

TEST(Toml, IntegerLimits) {
  auto doc = parse("max = 9223372036854775807\nmin = -9223372036854775808\n");
  EXPECT_EQ(at(doc, "max").integer, INT64_MAX);
  EXPECT_EQ(at(doc, "min").integer, INT64_MIN);
  expect_error("a = 9223372036854775808", 1, "out of range");
  expect_error("\na = -9223372036854775809", 2, "out of range");
}

TEST(Toml, BasicStringEscapes) {
  auto doc = parse(R"(s = "q\" b\\ n\n t\t r\r b\b f\f e\u00e9 g\U0001F600 k\u2026")");
  EXPECT_EQ(at(doc, "s").string, "q\" b\\ n\n t\t r\r b\b f\f e\xc3\xa9 g\xf0\x9f\x98\x80 k\xe2\x80\xa6");
  EXPECT_EQ(at(parse("s = \"\""), "s").string, "");
  EXPECT_EQ(at(parse("s = ''"), "s").string, "");
  EXPECT_EQ(at(parse("s = 'C:\\path\\\"x'"), "s").string, "C:\\path\\\"x");
  EXPECT_EQ(at(parse("s = \"tab\tinside\""), "s").string, "tab\tinside");
}

TEST(Toml, StringErrors) {
  expect_error("s = \"open", 1, "unterminated string");
  expect_error("a = 1\ns = 'open\n", 2, "unterminated string");
  expect_error("s = \"bad \\x escape\"", 1, "invalid escape");
  expect_error("s = \"\\u12\"", 1, "hex digits");
  expect_error("s = \"\\uD800\"", 1, "Unicode scalar");
  expect_error("s = \"\\U00110000\"", 1, "Unicode scalar");
  expect_error("s = \"\"\"multi\"\"\"", 1, "multi-line");
  expect_error("s = '''multi'''", 1, "multi-line");
  expect_error(std::string_view("s = \"a\x01\"", 8), 1, "control character");
}

TEST(Toml, Arrays) {
  auto doc = parse(
      "empty = []\n"
      "ints = [1, 2, 3]\n"
      "strs = [\n"
      "  \"a\",  # first\n"
      "  'b',\n"
      "\n"
      "  # a comment line\n"
      "]\n"
      "nested = [[1], ['x']]\n"
      "after = 1\n");
  EXPECT_TRUE(at(doc, "empty").items.empty());
  EXPECT_EQ(at(doc, "empty").kind, Value::Kind::array);
  ASSERT_EQ(at(doc, "ints").items.size(), 3u);
  EXPECT_EQ(at(doc, "ints").items[2].integer, 3);
  ASSERT_EQ(at(doc, "strs").items.size(), 2u);
  EXPECT_EQ(at(doc, "strs").items[0].string, "a");
  EXPECT_EQ(at(doc, "strs").items[1].string, "b");
  EXPECT_EQ(at(doc, "strs").items[1].line, 5);
  EXPECT_EQ(at(doc, "strs").line, 3);
  EXPECT_EQ(at(doc, "nested").items[1].items[0].string, "x");
  EXPECT_EQ(at(doc, "after").line, 10);

  expect_error("a = [1, 2", 1, "unterminated array");
  expect_error("a = [1 2]", 1, "expected ','");
  expect_error("a = [1,,2]", 1, "expected a value");
  expect_error("a = [\n1,\n2\n", 4, "unterminated array");
}

TEST(Toml, TablesAndSubTables) {
  auto doc = parse(
      "top = 1\n"
      "[server]\n"
      "port = 80\n"
      "[server.tls]   # comment\n"
      "cert = \"c\"\n"
      "[ \"quoted table\" . 'sub' ]\n"
      "x = 1\n");
  EXPECT_EQ(doc.keys, (std::vector<std::string>{"top", "server", "quoted table"}));
  const Value& server = at(doc, "server");
  EXPECT_TRUE(server.is_table());
  EXPECT_EQ(server.line, 2);
  EXPECT_EQ(at(server, "port").integer, 80);
  EXPECT_EQ(at(at(server, "tls"), "cert").string, "c");
  EXPECT_EQ(at(at(at(doc, "quoted table"), "sub"), "x").integer, 1);
}

TEST(Toml, ImplicitTablesMayBeDefinedLaterOnce) {
  auto doc = parse("[a.b.c]\nx = 1\n[a]\ny = 2\n[a.b]\nz = 3\n");
  EXPECT_EQ(at(at(doc, "a"), "y").integer, 2);
  EXPECT_EQ(at(at(at(doc, "a"), "b"), "z").integer, 3);
  EXPECT_EQ(at(at(at(at(doc, "a"), "b"), "c"), "x").integer, 1);
  expect_error("[a.b]\n[a]\n[a]\n", 3, "defined twice");
}

TEST(Toml, DottedKeys) {
  auto doc = parse("site.name = \"x\"\nsite.\"owner\".id = 5\n[t]\nk.v = true\n");
  EXPECT_EQ(at(at(doc, "site"), "name").string, "x");
  EXPECT_EQ(at(at(at(doc, "site"), "owner"), "id").integer, 5);
  EXPECT_TRUE(at(at(at(doc, "t"), "k"), "v").boolean);
  // A sub-table may be added under a dotted-key table by a header…
  auto sub = parse("[fruit]\napple.color = 'red'\n[fruit.apple.texture]\nsmooth = true\n");
  EXPECT_TRUE(at(at(at(at(sub, "fruit"), "apple"), "texture"), "smooth").boolean);
  // …but the dotted table itself may not be reopened, nor may a value be extended.
  expect_error("[fruit]\napple.color = 'red'\n[fruit.apple]\n", 3, "defined twice");
  expect_error("a = 1\na.b = 2\n", 2, "already defined on line 1");
  expect_error("[x.y]\n[x]\ny.z = 1\n", 3, "already defined on line 1");
}

TEST(Toml, ArraysOfTables) {
  auto doc = parse(
      "[[product]]\n"
      "name = \"a\"\n"
      "[product.details]\n"
      "w = 1\n"
      "[[product]]\n"
      "name = \"b\"\n"
      "[product.details]\n"
      "w = 2\n"
      "[[shop.items]]\n"
      "n = 1\n");
  const Value& products = at(doc, "product");
  ASSERT_EQ(products.kind, Value::Kind::array);
  ASSERT_EQ(products.items.size(), 2u);
  EXPECT_EQ(at(products.items[0], "name").string, "a");
  EXPECT_EQ(at(at(products.items[0], "details"), "w").integer, 1);
  EXPECT_EQ(at(at(products.items[1], "details"), "w").integer, 2);
  EXPECT_EQ(at(at(doc, "shop"), "items").items.size(), 1u);

  expect_error("a = [1]\n[[a]]\n", 2, "conflicts");
  expect_error("[a]\n[[a]]\n", 2, "conflicts");
  expect_error("[[a]]\n[a]\n", 2, "defined twice");
  expect_error("[[a]\n", 1, "expected ']]'");
}

TEST(Toml, DuplicateKeysAreErrors) {
  expect_error("a = 1\nb = 2\na = 3\n", 3, "duplicate key a (first defined on line 1)");
  expect_error("[t]\nx = 1\n\nx = 2\n", 4, "duplicate key x");
  expect_error("a = 1\n[a]\n", 2, "defined twice");
  expect_error("[t]\n[t]\n", 2, "defined twice");
  expect_error("\"a\" = 1\n'a' = 2\n", 2, "duplicate key a");
  expect_error("[t]\ns.x = 1\ns.x = 2\n", 3, "duplicate key s.x");
}

TEST(Toml, UnsupportedValuesAreNamed) {
  expect_error("f = 1.5", 1, "floats are not supported");
  expect_error("f = 1e3", 1, "floats are not supported");
  expect_error("f = inf", 1, "floats are not supported");
  expect_error("d = 1979-05-27", 1, "dates and times");
  expect_error("d = 07:32:00", 1, "dates and times");
  expect_error("h = 0xff", 1, "hexadecimal");
  expect_error("t = { a = 1 }", 1, "inline tables");
  expect_error("z = 007", 1, "leading zeros");
  expect_error("u = 1__0", 1, "'_' must be between digits");
  expect_error("u = 10_", 1, "'_' must be between digits");
  expect_error("w = hello", 1, "strings need quotes");
  expect_error("b = True", 1, "strings need quotes");
}

TEST(Toml, SyntaxErrorsNameTheLine) {
  expect_error("a = 1\n\n= 2\n", 3, "expected a key");
  expect_error("a = 1\nb\n", 2, "expected '='");
  expect_error("a =\n", 1, "missing value");
  expect_error("a = # nothing\n", 1, "missing value");
  expect_error("a = 1 2\n", 1, "unexpected text after a value");
  expect_error("[t] x = 1\n", 1, "unexpected text after a table header");
  expect_error("[t\n", 1, "expected ']'");
  expect_error("a.b c = 1\n", 1, "expected '='");
  expect_error("k$y = 1\n", 1, "expected '='");
  expect_error("$ = 1\n", 1, "invalid character");
  expect_error("a = 1\rb = 2\n", 1, "carriage return");
}

TEST(Toml, WindowsLineEndings) {
  auto doc = parse("a = 1\r\n[t]\r\nb = [\r\n 'x',\r\n]\r\n");
  EXPECT_EQ(at(doc, "a").integer, 1);
  EXPECT_EQ(at(at(doc, "t"), "b").items[0].string, "x");
  EXPECT_EQ(at(at(doc, "t"), "b").line, 3);
}

}  // namespace
}  // namespace cove::shim::toml
