#pragma once
// The `metadata` filter of the sandbox lists. The SDK builds it as
// URLSearchParams({encodeURIComponent(k): encodeURIComponent(v)}) and the HTTP client encodes the
// result once more, so on the wire `{user:'alice','a b':'c&d'}` is
// `user%3Dalice%26a%252520b%3Dc%252526d`. Decoding mirrors E2B's API: unescape the parameter,
// parse that as a query string (unescaping keys and values), then unescape each key and value
// again. For plain alphanumerics every step is the identity.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace cove::shim::api {

// `raw` is the parameter's value exactly as it appears in the request target. nullopt on a bad
// escape at any step or an empty key. A repeated key keeps its first value.
std::optional<std::map<std::string, std::string>> decode_metadata_filter(std::string_view raw);

}  // namespace cove::shim::api
