#pragma once
// A small TOML reader for cove.toml (we may not add a TOML library). The subset:
//   # comments; key = value; bare keys [A-Za-z0-9_-]+, "basic" or 'literal' quoted keys, dotted
//   keys (a.b = 1); [table] and [table.sub] headers; [[array.of.tables]]; values: "basic strings"
//   with escapes \" \\ \b \f \n \r \t \uXXXX \UXXXXXXXX, 'literal strings', decimal integers
//   (+/-, _ between digits), true/false, arrays of those (spanning lines, comments inside,
//   trailing comma allowed).
// Not supported, and reported as such: floats, dates, inline tables, multi-line strings,
// hex/octal/binary integers. Duplicate keys and redefined tables are errors.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cove::shim::toml {

struct ParseError : std::runtime_error {
  ParseError(int line, const std::string& message)
      : std::runtime_error("line " + std::to_string(line) + ": " + message), line(line) {}
  int line;
};

struct Value {
  enum class Kind { string, integer, boolean, array, table };
  Kind kind = Kind::table;
  int line = 0;              // where the value (or the table's header / first key) appears
  std::string string;
  int64_t integer = 0;
  bool boolean = false;
  std::vector<Value> items;          // array elements; for a table, the values of `keys`
  std::vector<std::string> keys;     // table keys in file order, parallel to `items`

  bool is_table() const { return kind == Kind::table; }
  const Value* find(std::string_view key) const;  // tables only
};

std::string_view kind_name(Value::Kind kind);  // "string", "integer", …, for error messages

// The document's root table. Throws ParseError naming the line.
Value parse(std::string_view text);

}  // namespace cove::shim::toml
