#include "interpreter/result_mapping.hpp"

#include <array>
#include <string_view>
#include <utility>

namespace cove::interpreter {
namespace {

// In the order E2B writes them.
constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kFields{{
    {"text/plain", "text"},
    {"text/html", "html"},
    {"text/markdown", "markdown"},
    {"image/svg+xml", "svg"},
    {"image/png", "png"},
    {"image/jpeg", "jpeg"},
    {"application/pdf", "pdf"},
    {"text/latex", "latex"},
    {"application/json", "json"},
    {"application/javascript", "javascript"},
    {"e2b/data", "data"},
    {"e2b/chart", "chart"},
}};

// Jupyter allows a text MIME value as a list of lines; E2B's fields are strings.
nlohmann::json as_field_value(const nlohmann::json& value, std::string_view mime) {
  bool structured = mime == "application/json" || mime == "e2b/data" || mime == "e2b/chart";
  if (!structured && value.is_array()) {
    std::string joined;
    for (const auto& part : value) {
      if (part.is_string()) joined += part.get<std::string>();
    }
    return joined;
  }
  return value;
}

}  // namespace

std::string strip_matching_quotes(std::string text) {
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  return text;
}

nlohmann::ordered_json result_line(const nlohmann::json& bundle, bool is_main_result) {
  nlohmann::ordered_json line;
  line["type"] = "result";
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (bundle.is_object()) {
    for (const auto& [mime, field] : kFields) {
      auto it = bundle.find(std::string(mime));
      if (it == bundle.end() || it->is_null()) continue;
      nlohmann::json value = as_field_value(*it, mime);
      if (field == "text" && value.is_string()) value = strip_matching_quotes(value.get<std::string>());
      line[std::string(field)] = value;
    }
    for (auto it = bundle.begin(); it != bundle.end(); ++it) {
      bool known = false;
      for (const auto& [mime, field] : kFields) known = known || it.key() == mime;
      if (!known) extra[it.key()] = *it;
    }
  }
  line["extra"] = std::move(extra);
  line["is_main_result"] = is_main_result;
  return line;
}

}  // namespace cove::interpreter
