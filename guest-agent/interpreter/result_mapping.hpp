#pragma once
// A kernel's MIME bundle → E2B's `result` line: the known MIME types become named fields, the
// rest goes to `extra`. No other top-level keys: the JS SDK turns unknown ones into its own extra.
#include <nlohmann/json.hpp>

namespace cove::interpreter {

nlohmann::ordered_json result_line(const nlohmann::json& bundle, bool is_main_result);

// E2B's quirk, which SDK users rely on (a Python 'hello' result reads as hello): a text that
// starts and ends with the same quote character loses both.
std::string strip_matching_quotes(std::string text);

}  // namespace cove::interpreter
