#pragma once
// envd's REST error shape: `{"code":<status>,"message":"..."}` plus a newline (Go's json.Encoder).
#include <nlohmann/json.hpp>

#include "http/exchange.hpp"

namespace cove::rest {

inline http::net::awaitable<void> respond_json_error(http::Exchange& ex, unsigned status, const std::string& message) {
  ex.response_headers().set("X-Content-Type-Options", "nosniff");
  nlohmann::json body{{"code", status}, {"message", message}};
  co_await ex.respond(status, "application/json; charset=utf-8",
                      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace cove::rest
