#include "interpreter/languages.hpp"

#include "text/shell_quote.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace cove::interpreter {
namespace {

// Values are embedded in string literals; escape what would end or break the literal. (E2B's
// server interpolates them raw, so a quote in a value breaks the cell there.)
std::string quoted_single(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "'";
}

std::string quoted_double(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string set_one(const std::string& language, const std::string& key, const std::string& value) {
  if (language == "python") {
    return "import os; os.environ[" + quoted_single(key) + "] = " + quoted_single(value) + "\n";
  }
  if (language == "javascript" || language == "typescript") {
    // `void`: the assignment must not become the cell's value when the cell has no expression.
    return "void (process.env[" + quoted_single(key) + "] = " + quoted_single(value) + ");\n";
  }
  if (language == "r") return "Sys.setenv(" + quoted_double(key) + " = " + quoted_double(value) + ")\n";
  if (language == "bash") return "export " + key + "=" + text::shell_quote(value) + "\n";
  return "";
}

std::string unset_one(const std::string& language, const std::string& key) {
  if (language == "python") return "import os; os.environ.pop(" + quoted_single(key) + ", None)\n";
  if (language == "javascript" || language == "typescript") {
    return "void (delete process.env[" + quoted_single(key) + "]);\n";
  }
  if (language == "r") return "Sys.unsetenv(" + quoted_double(key) + ")\n";
  if (language == "bash") return "unset " + key + "\n";
  return "";
}

// Names a shell accepts after export/unset; anything else is skipped rather than executed.
bool shell_name(const std::string& key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key[0]))) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

std::string normalize_language(std::string_view language) {
  std::string s(language);
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s.empty()) return "python";
  if (s == "js") return "javascript";
  if (s == "ts") return "typescript";
  return s;
}

std::string env_set_code(const std::string& language, const std::map<std::string, std::string>& vars) {
  std::string code;
  for (const auto& [k, v] : vars) {
    if (language == "bash" && !shell_name(k)) continue;
    code += set_one(language, k, v);
  }
  return code;
}

std::string env_restore_code(const std::string& language, const std::map<std::string, std::string>& keys,
                             const std::map<std::string, std::string>& globals) {
  std::string code;
  for (const auto& [k, unused] : keys) {
    if (language == "bash" && !shell_name(k)) continue;
    auto g = globals.find(k);
    code += g != globals.end() ? set_one(language, k, g->second) : unset_one(language, k);
  }
  return code;
}

std::string prepend_indented(const std::string& snippet, const std::string& code) {
  if (snippet.empty()) return code;
  std::string indent;
  std::istringstream lines(code);
  for (std::string line; std::getline(lines, line);) {
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    indent = line.substr(0, first);
    break;
  }
  std::string out;
  std::istringstream snippet_lines(snippet);
  for (std::string line; std::getline(snippet_lines, line);) out += indent + line + "\n";
  return out + code;
}

}  // namespace cove::interpreter
