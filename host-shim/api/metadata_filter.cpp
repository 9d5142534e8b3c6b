#include "api/metadata_filter.hpp"

#include "http/exchange.hpp"

namespace cove::shim::api {

std::optional<std::map<std::string, std::string>> decode_metadata_filter(std::string_view raw) {
  auto once = http::query_unescape(raw);  // the HTTP client's encoding
  if (!once) return std::nullopt;
  std::map<std::string, std::string> out;
  std::string_view q = *once;
  while (!q.empty()) {
    auto amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    std::string_view key_text = pair.substr(0, eq);
    std::string_view value_text = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    // Second decode: URLSearchParams' encoding; third: encodeURIComponent's.
    auto key2 = http::query_unescape(key_text), value2 = http::query_unescape(value_text);
    if (!key2 || !value2) return std::nullopt;
    auto key3 = http::query_unescape(*key2), value3 = http::query_unescape(*value2);
    if (!key3 || !value3 || key3->empty()) return std::nullopt;
    out.emplace(std::move(*key3), std::move(*value3));  // emplace keeps the first value
  }
  return out;
}

}  // namespace cove::shim::api
