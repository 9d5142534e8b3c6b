#pragma once
// One NDJSON line of the /execute stream. Every non-ASCII character is escaped as \uXXXX: the JS
// SDK decodes each network chunk on its own, so a UTF-8 character split across chunks would be
// corrupted. Invalid UTF-8 from a kernel becomes U+FFFD instead of failing the stream.
#include <nlohmann/json.hpp>

#include <string>

namespace cove::interpreter {

std::string ndjson_line(const nlohmann::ordered_json& value);

}  // namespace cove::interpreter
