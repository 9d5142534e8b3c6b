#include "edge/cors.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "edge/forwarded_headers.hpp"

namespace cove::shim::edge {
namespace {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

constexpr size_t kHeaderLimit = 64 * 1024;
constexpr size_t kPreflightBodyLimit = 64 * 1024;

void close_socket(http::Socket& s) {
  boost::system::error_code ignored;
  s.close(ignored);
}
}  // namespace

bool is_cors_preflight(const http::Exchange& exchange) {
  return exchange.method() == "OPTIONS" && exchange.has_header("Origin") &&
         exchange.has_header("Access-Control-Request-Method");
}

http::Fields preflight_answer_fields(const http::Exchange& exchange) {
  http::Fields fields;
  fields.set("Access-Control-Allow-Origin", std::string(exchange.header("Origin")));
  fields.set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS");
  if (exchange.has_header("Access-Control-Request-Headers")) {
    fields.set("Access-Control-Allow-Headers", std::string(exchange.header("Access-Control-Request-Headers")));
  }
  fields.set("Access-Control-Max-Age", "86400");
  fields.set(bhttp::field::vary, "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
  return fields;
}

net::awaitable<RelayOutcome> relay_preflight(http::Exchange& exchange, http::Socket& upstream) {
  const std::string head = upstream_request_head(exchange.method(), exchange.target(), exchange.headers(),
                                                 BodyFraming::none);
  boost::system::error_code ec;
  co_await net::async_write(upstream, net::buffer(head), net::redirect_error(net::use_awaitable, ec));
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kPreflightBodyLimit);
  if (!ec) co_await bhttp::async_read(upstream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
  close_socket(upstream);
  if (ec) co_return RelayOutcome::upstream_failed_before_head;

  const auto& response = parser.get();
  const bool granted = response.result_int() / 100 == 2 &&
                       response.find(bhttp::field::access_control_allow_origin) != response.end();
  if (!granted) {
    const http::Fields fields = preflight_answer_fields(exchange);
    if (!co_await exchange.begin_relayed(204, fields)) co_return RelayOutcome::client_gone;
    co_return RelayOutcome::completed;
  }
  http::Fields fields = end_to_end_headers(response.base());
  fields.set(bhttp::field::content_length, std::to_string(response.body().size()));
  const unsigned status = response.result_int();
  if (!co_await exchange.begin_relayed(status, fields)) co_return RelayOutcome::client_gone;
  if (!response.body().empty() && !co_await exchange.write_body(response.body())) co_return RelayOutcome::client_gone;
  co_return RelayOutcome::completed;
}

}  // namespace cove::shim::edge
