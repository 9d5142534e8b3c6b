#include <gtest/gtest.h>

#include "interpreter/languages.hpp"

namespace cove::interpreter {
namespace {

TEST(Languages, Normalization) {
  EXPECT_EQ(normalize_language(""), "python");
  EXPECT_EQ(normalize_language("  Python "), "python");
  EXPECT_EQ(normalize_language("JS"), "javascript");
  EXPECT_EQ(normalize_language("ts"), "typescript");
  EXPECT_EQ(normalize_language("Bash"), "bash");
  EXPECT_EQ(normalize_language("r"), "r");
  EXPECT_EQ(normalize_language("java"), "java");
}

TEST(Languages, PythonSetAndRestore) {
  EXPECT_EQ(env_set_code("python", {{"FOO", "bar"}}), "import os; os.environ['FOO'] = 'bar'\n");
  // Quotes and backslashes cannot end the literal.
  EXPECT_EQ(env_set_code("python", {{"K", "a'b\\c"}}), "import os; os.environ['K'] = 'a\\'b\\\\c'\n");
  EXPECT_EQ(env_restore_code("python", {{"FOO", "x"}, {"G", "y"}}, {{"G", "global"}}),
            "import os; os.environ.pop('FOO', None)\nimport os; os.environ['G'] = 'global'\n");
}

TEST(Languages, JavascriptSnippetsHaveNoCompletionValue) {
  EXPECT_EQ(env_set_code("javascript", {{"FOO", "bar"}}), "void (process.env['FOO'] = 'bar');\n");
  EXPECT_EQ(env_restore_code("typescript", {{"FOO", "bar"}}, {}), "void (delete process.env['FOO']);\n");
}

TEST(Languages, BashQuotesSafelyAndSkipsBadNames) {
  EXPECT_EQ(env_set_code("bash", {{"FOO", "it's $HOME"}}), "export FOO='it'\\''s $HOME'\n");
  EXPECT_EQ(env_set_code("bash", {{"BAD;rm -rf /", "x"}, {"1X", "y"}}), "");
  EXPECT_EQ(env_restore_code("bash", {{"FOO", "x"}}, {}), "unset FOO\n");
}

TEST(Languages, RAndUnknown) {
  EXPECT_EQ(env_set_code("r", {{"FOO", "b\"r"}}), "Sys.setenv(\"FOO\" = \"b\\\"r\")\n");
  EXPECT_EQ(env_set_code("java", {{"FOO", "bar"}}), "");
}

TEST(Languages, SnippetTakesTheIndentOfTheFirstCodeLine) {
  EXPECT_EQ(prepend_indented("a\nb\n", "\n    x = 1\n    y\n"), "    a\n    b\n\n    x = 1\n    y\n");
  EXPECT_EQ(prepend_indented("a\n", "x"), "a\nx");
  EXPECT_EQ(prepend_indented("", "x"), "x");
}

}  // namespace
}  // namespace cove::interpreter
