#include "api/query_string.hpp"

#include "api/errors.hpp"
#include "http/exchange.hpp"

namespace cove::shim::api {
namespace {
std::string decode_value(std::string_view name, std::string_view raw) {
  auto value = http::query_unescape(raw);
  if (!value) throw bad_request("Invalid escape in query parameter '" + std::string(name) + "'");
  return *value;
}
}  // namespace

QueryString::QueryString(std::string_view q) {
  while (!q.empty()) {
    auto amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    auto key = http::query_unescape(pair.substr(0, eq));
    if (!key) continue;
    pairs_.push_back({*key, eq == std::string_view::npos ? std::string() : std::string(pair.substr(eq + 1))});
  }
}

std::optional<std::string> QueryString::raw(std::string_view name) const {
  for (const auto& p : pairs_) {
    if (p.key == name) return p.raw_value;
  }
  return std::nullopt;
}

std::optional<std::string> QueryString::get(std::string_view name) const {
  auto value = raw(name);
  if (!value) return std::nullopt;
  return decode_value(name, *value);
}

std::vector<std::string> QueryString::all(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& p : pairs_) {
    if (p.key == name) out.push_back(decode_value(name, p.raw_value));
  }
  return out;
}

}  // namespace cove::shim::api
