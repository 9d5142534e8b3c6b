#include "interpreter/ndjson.hpp"

namespace cove::interpreter {

std::string ndjson_line(const nlohmann::ordered_json& value) {
  // Compact JSON never contains a raw newline (those are escaped), so the line is never blank
  // and never split.
  std::string line = value.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
  line += '\n';
  return line;
}

}  // namespace cove::interpreter
