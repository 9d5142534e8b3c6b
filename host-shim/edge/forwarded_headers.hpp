#pragma once
// What crosses the proxy: end-to-end headers only. Hop-by-hop headers (Connection, Keep-Alive,
// Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade and whatever Connection names) describe one
// connection and are rebuilt on each side; Host passes through unchanged, as E2B's proxy does.
#include <boost/beast/http/fields.hpp>

#include <string>
#include <string_view>

namespace cove::shim::edge {

using Fields = boost::beast::http::fields;

enum class BodyFraming { none, sized, chunked };

bool is_hop_by_hop(std::string_view name);

// `in` without hop-by-hop headers.
Fields end_to_end_headers(const Fields& in);

// The request head sent upstream: HTTP/1.1, end-to-end headers but the traffic token, `Connection: close` (one
// upstream connection per request), the body framing given. Expect is dropped: the proxy answers
// 100-continue itself when it starts reading the body.
std::string upstream_request_head(std::string_view method, std::string_view target, const Fields& headers,
                                  BodyFraming framing);

}  // namespace cove::shim::edge
