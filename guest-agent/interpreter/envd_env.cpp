#include "interpreter/envd_env.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <chrono>

namespace cove::interpreter {

namespace beast = boost::beast;
namespace bhttp = beast::http;

net::awaitable<EnvdEnvResult> fetch_global_env(net::any_io_executor executor, uint16_t envd_port,
                                               std::optional<std::string> access_token) {
  EnvdEnvResult result;
  try {
    beast::tcp_stream stream(executor);
    stream.expires_after(std::chrono::seconds(5));
    net::ip::tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), envd_port);
    co_await stream.async_connect(endpoint, net::use_awaitable);
    bhttp::request<bhttp::empty_body> request(bhttp::verb::get, "/envs", 11);
    request.set(bhttp::field::host, "localhost");
    if (access_token) request.set("X-Access-Token", *access_token);
    co_await bhttp::async_write(stream, request, net::use_awaitable);
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(4 << 20);
    co_await bhttp::async_read(stream, buffer, parser, net::use_awaitable);
    const auto& response = parser.get();
    if (response.result() == bhttp::status::unauthorized) {
      result.outcome = EnvdEnvResult::Outcome::unauthorized;
      co_return result;
    }
    if (response.result() != bhttp::status::ok) co_return result;
    auto body = nlohmann::json::parse(response.body(), nullptr, false);
    if (!body.is_object()) co_return result;
    for (auto it = body.begin(); it != body.end(); ++it) {
      if (it->is_string()) result.env[it.key()] = it->get<std::string>();
    }
    result.outcome = EnvdEnvResult::Outcome::ok;
  } catch (const std::exception&) {
    result.outcome = EnvdEnvResult::Outcome::unavailable;
  }
  co_return result;
}

}  // namespace cove::interpreter
