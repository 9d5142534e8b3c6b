#pragma once
// Language names as E2B accepts them, and the per-language code that sets and unsets environment
// variables inside a kernel (prepended to the user's cell, undone after it).
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace cove::interpreter {

// "" → python; lowercase and trimmed; js → javascript, ts → typescript.
std::string normalize_language(std::string_view language);

// Code that sets each variable (empty when there is none or the language has no snippet).
std::string env_set_code(const std::string& language, const std::map<std::string, std::string>& vars);

// Code that restores each key to its global value, or removes it when there is none.
std::string env_restore_code(const std::string& language, const std::map<std::string, std::string>& keys,
                             const std::map<std::string, std::string>& globals);

// `snippet` indented like the first non-blank line of `code` (IPython dedents a cell as a whole,
// and clients send indented code), followed by `code`.
std::string prepend_indented(const std::string& snippet, const std::string& code);

}  // namespace cove::interpreter
