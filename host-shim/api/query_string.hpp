#pragma once
// A request's query string kept raw: most parameters are read percent-decoded once, but
// `metadata` needs its raw text (it is decoded three times, see metadata_filter.hpp), and `state`
// may repeat.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cove::shim::api {

class QueryString {
 public:
  explicit QueryString(std::string_view raw);

  // First value, percent-decoded ('+' is a space); nullopt if absent. Throws ApiError(400) on a
  // bad escape in that value.
  std::optional<std::string> get(std::string_view name) const;
  // Every value of the parameter, decoded, in order.
  std::vector<std::string> all(std::string_view name) const;
  // First value exactly as sent.
  std::optional<std::string> raw(std::string_view name) const;

 private:
  struct Pair {
    std::string key;        // decoded (undecodable keys never match)
    std::string raw_value;
  };
  std::vector<Pair> pairs_;
};

}  // namespace cove::shim::api
