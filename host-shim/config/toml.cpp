#include "config/toml.hpp"

#include <limits>
#include <set>
#include <tuple>
#include <utility>

namespace cove::shim::toml {

const Value* Value::find(std::string_view key) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) return &items[i];
  }
  return nullptr;
}

std::string_view kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::string: return "string";
    case Value::Kind::integer: return "integer";
    case Value::Kind::boolean: return "boolean";
    case Value::Kind::array: return "array";
    case Value::Kind::table: return "table";
  }
  return "value";
}

namespace {

bool is_bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Shown in messages: printable keys as they are, others quoted.
std::string show_key(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += '.';
    bool bare = !p.empty();
    for (char c : p) bare = bare && is_bare_key_char(c);
    out += bare ? p : "\"" + p + "\"";
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {
    root_.kind = Value::Kind::table;
    root_.line = 1;
  }

  Value parse() {
    Value* current = &root_;
    std::string current_path;
    while (true) {
      skip_ws();
      if (eof()) break;
      char c = peek();
      if (c == '#') {
        skip_comment();
      } else if (c == '\n' || c == '\r') {
        consume_newline();
      } else if (c == '[') {
        if (peek(1) == '[') {
          std::tie(current, current_path) = array_table_header();
        } else {
          std::tie(current, current_path) = table_header();
        }
        expect_line_end("a table header");
      } else {
        key_value(*current, current_path);
        expect_line_end("a value");
      }
    }
    return std::move(root_);
  }

 private:
  // --- characters ---
  bool eof() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  [[noreturn]] void fail(const std::string& message) const { throw ParseError(line_, message); }

  void skip_ws() {
    while (!eof() && (peek() == ' ' || peek() == '\t')) ++pos_;
  }
  void skip_comment() {
    while (!eof() && peek() != '\n' && peek() != '\r') ++pos_;
  }
  void consume_newline() {
    if (peek() == '\r') {
      if (peek(1) != '\n') fail("a carriage return must be followed by a newline");
      ++pos_;
    }
    ++pos_;
    ++line_;
  }
  // Whitespace, newlines and comments: what may separate array elements.
  void skip_blank() {
    while (!eof()) {
      char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        skip_comment();
      } else if (c == '\n' || c == '\r') {
        consume_newline();
      } else {
        break;
      }
    }
  }
  void expect_line_end(const char* after) {
    skip_ws();
    if (!eof() && peek() == '#') skip_comment();
    if (eof()) return;
    if (peek() != '\n' && peek() != '\r') fail(std::string("unexpected text after ") + after);
    consume_newline();
  }

  // --- keys ---
  std::string key_part() {
    char c = peek();
    if (c == '"') return basic_string();
    if (c == '\'') return literal_string();
    size_t start = pos_;
    while (!eof() && is_bare_key_char(peek())) ++pos_;
    if (pos_ == start) {
      if (eof() || c == '\n' || c == '\r' || c == '=') fail("expected a key");
      fail(std::string("invalid character '") + c + "' in a key");
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  std::vector<std::string> dotted_key() {
    std::vector<std::string> parts;
    while (true) {
      skip_ws();
      parts.push_back(key_part());
      skip_ws();
      if (peek() != '.') return parts;
      ++pos_;
    }
  }

  // --- strings ---
  std::string basic_string() {
    ++pos_;  // opening quote
    if (peek() == '"' && peek(1) == '"') fail("multi-line strings are not supported");
    std::string out;
    while (true) {
      if (eof() || peek() == '\n' || peek() == '\r') fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c == '\\') {
        if (eof()) fail("unterminated string");
        char e = text_[pos_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': append_utf8(out, unicode_escape(4)); break;
          case 'U': append_utf8(out, unicode_escape(8)); break;
          default: fail(std::string("invalid escape sequence '\\") + (e >= 0x20 && e < 0x7f ? std::string(1, e) : "?") + "'");
        }
        continue;
      }
      check_string_char(c);
      out += c;
    }
  }
  uint32_t unicode_escape(int digits) {
    uint32_t cp = 0;
    for (int i = 0; i < digits; ++i) {
      char h = peek();
      int v;
      if (h >= '0' && h <= '9') v = h - '0';
      else if (h >= 'a' && h <= 'f') v = h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') v = h - 'A' + 10;
      else fail("\\u and \\U escapes need " + std::to_string(digits) + " hex digits");
      cp = cp * 16 + static_cast<uint32_t>(v);
      ++pos_;
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) fail("escape is not a Unicode scalar value");
    return cp;
  }
  std::string literal_string() {
    ++pos_;
    if (peek() == '\'' && peek(1) == '\'') fail("multi-line strings are not supported");
    std::string out;
    while (true) {
      if (eof() || peek() == '\n' || peek() == '\r') fail("unterminated string");
      char c = text_[pos_++];
      if (c == '\'') return out;
      check_string_char(c);
      out += c;
    }
  }
  void check_string_char(char c) const {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) fail("control character in a string (use an escape)");
  }

  // --- values ---
  Value value() {
    Value v;
    v.line = line_;
    char c = peek();
    if (c == '"') {
      v.kind = Value::Kind::string;
      v.string = basic_string();
    } else if (c == '\'') {
      v.kind = Value::Kind::string;
      v.string = literal_string();
    } else if (c == '[') {
      v.kind = Value::Kind::array;
      ++pos_;
      while (true) {
        skip_blank();
        if (eof()) fail("unterminated array");
        if (peek() == ']') break;
        v.items.push_back(value());
        skip_blank();
        if (eof()) fail("unterminated array");
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        if (peek() == ']') break;
        fail("expected ',' or ']' in an array");
      }
      ++pos_;
    } else if (c == '{') {
      fail("inline tables are not supported; use a [table] header");
    } else {
      size_t start = pos_;
      while (!eof() && (is_bare_key_char(peek()) || peek() == '+' || peek() == '.' || peek() == ':')) ++pos_;
      std::string_view token = text_.substr(start, pos_ - start);
      if (token.empty()) fail("expected a value");
      if (token == "true" || token == "false") {
        v.kind = Value::Kind::boolean;
        v.boolean = token == "true";
      } else {
        v.kind = Value::Kind::integer;
        v.integer = integer(token);
      }
    }
    return v;
  }
  int64_t integer(std::string_view token) const {
    std::string_view digits = token;
    bool negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    auto unsupported = [&]() -> std::string {
      if (digits.size() > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'o' || digits[1] == 'b')) {
        return "hexadecimal, octal and binary integers are not supported";
      }
      if (digits == "inf" || digits == "nan") return "floats are not supported";
      if (digits.find(':') != std::string_view::npos ||
          (digits.size() > 4 && is_digit(digits[0]) && digits.find('-') != std::string_view::npos)) {
        return "dates and times are not supported";
      }
      if (!digits.empty() && is_digit(digits[0]) && digits.find_first_of(".eE") != std::string_view::npos) {
        return "floats are not supported";
      }
      if (!digits.empty() && digits.find_first_not_of("0123456789_") == std::string_view::npos) {
        return "'_' must be between digits";
      }
      return "invalid value '" + std::string(token) + "' (strings need quotes)";
    };
    if (digits.empty() || !is_digit(digits.front()) || !is_digit(digits.back())) fail(unsupported());
    if (digits.size() > 1 && digits[0] == '0') {
      if (digits.find_first_not_of("0123456789_") == std::string_view::npos) fail("leading zeros are not allowed");
      fail(unsupported());
    }
    // Magnitudes accumulate negatively so INT64_MIN parses.
    int64_t value = 0;
    char prev = '\0';
    for (char c : digits) {
      if (c == '_') {
        if (prev == '_') fail("'_' must be between digits");
      } else if (is_digit(c)) {
        int d = c - '0';
        if (value < (std::numeric_limits<int64_t>::min() + d) / 10) fail("integer out of range");
        value = value * 10 - d;
      } else {
        fail(unsupported());
      }
      prev = c;
    }
    if (!negative) {
      if (value == std::numeric_limits<int64_t>::min()) fail("integer out of range");
      value = -value;
    }
    return value;
  }

  // --- structure ---
  // Tables are tracked by a path that spells every key (length-prefixed, so any key is
  // unambiguous) and every array-of-tables index, because [[a]] opens a fresh `a`.
  static std::string child_path(const std::string& parent, const std::string& key) {
    return parent + std::to_string(key.size()) + ":" + key;
  }

  Value& add(Value& table, const std::string& key, Value v) {
    table.keys.push_back(key);
    table.items.push_back(std::move(v));
    return table.items.back();
  }
  Value new_table() const {
    Value t;
    t.kind = Value::Kind::table;
    t.line = line_;
    return t;
  }

  // Walks a header's path up to (not including) its last part.
  std::pair<Value*, std::string> walk_header(const std::vector<std::string>& parts) {
    Value* table = &root_;
    std::string path;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      path = child_path(path, parts[i]);
      Value* next = const_cast<Value*>(table->find(parts[i]));
      if (!next) {
        next = &add(*table, parts[i], new_table());
      } else if (next->kind == Value::Kind::array && array_tables_.count(path)) {
        path += "[" + std::to_string(next->items.size() - 1) + "]";
        next = &next->items.back();
      } else if (next->kind != Value::Kind::table) {
        fail("key " + show_key({parts.begin(), parts.begin() + static_cast<long>(i) + 1}) + " is not a table");
      }
      table = next;
    }
    return {table, path};
  }

  std::pair<Value*, std::string> table_header() {
    ++pos_;
    auto parts = dotted_key();
    if (peek() != ']') fail("expected ']' after the table name");
    ++pos_;
    auto [parent, parent_path] = walk_header(parts);
    std::string path = child_path(parent_path, parts.back());
    Value* table = const_cast<Value*>(parent->find(parts.back()));
    if (table) {
      if (table->kind != Value::Kind::table || defined_.count(path) || dotted_.count(path)) {
        fail("[" + show_key(parts) + "] is defined twice (first on line " + std::to_string(table->line) + ")");
      }
      table->line = line_;  // was implicit (created by a deeper header); now defined here
    } else {
      table = &add(*parent, parts.back(), new_table());
    }
    defined_.insert(path);
    return {table, path};
  }

  std::pair<Value*, std::string> array_table_header() {
    pos_ += 2;
    auto parts = dotted_key();
    if (peek() != ']' || peek(1) != ']') fail("expected ']]' after the array-of-tables name");
    pos_ += 2;
    auto [parent, parent_path] = walk_header(parts);
    std::string path = child_path(parent_path, parts.back());
    Value* array = const_cast<Value*>(parent->find(parts.back()));
    if (!array) {
      Value a;
      a.kind = Value::Kind::array;
      a.line = line_;
      array = &add(*parent, parts.back(), std::move(a));
      array_tables_.insert(path);
    } else if (array->kind != Value::Kind::array || !array_tables_.count(path)) {
      fail("[[" + show_key(parts) + "]] conflicts with key defined on line " + std::to_string(array->line));
    }
    array->items.push_back(new_table());
    path += "[" + std::to_string(array->items.size() - 1) + "]";
    defined_.insert(path);
    return {&array->items.back(), path};
  }

  void key_value(Value& current, const std::string& current_path) {
    int key_line = line_;
    auto parts = dotted_key();
    if (peek() != '=') fail("expected '=' after key " + show_key(parts));
    ++pos_;
    skip_ws();
    if (eof() || peek() == '\n' || peek() == '\r' || peek() == '#') fail("missing value for key " + show_key(parts));
    Value* table = &current;
    std::string path = current_path;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      path = child_path(path, parts[i]);
      Value* next = const_cast<Value*>(table->find(parts[i]));
      if (!next) {
        next = &add(*table, parts[i], new_table());
        dotted_.insert(path);
      } else if (next->kind != Value::Kind::table || !dotted_.count(path)) {
        // A dotted key may extend only tables other dotted keys of this section made.
        fail("key " + show_key({parts.begin(), parts.begin() + static_cast<long>(i) + 1}) +
             " is already defined on line " + std::to_string(next->line));
      }
      table = next;
    }
    if (const Value* existing = table->find(parts.back())) {
      fail("duplicate key " + show_key(parts) + " (first defined on line " + std::to_string(existing->line) + ")");
    }
    Value v = value();
    v.line = key_line;
    add(*table, parts.back(), std::move(v));
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  Value root_;
  std::set<std::string> defined_;       // tables opened by a header
  std::set<std::string> dotted_;        // tables made by dotted keys
  std::set<std::string> array_tables_;  // arrays made by [[header]]
};

}  // namespace

Value parse(std::string_view text) { return Parser(text).parse(); }

}  // namespace cove::shim::toml
