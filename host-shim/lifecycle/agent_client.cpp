#include "lifecycle/agent_client.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace cove::shim {
namespace {
namespace bhttp = boost::beast::http;

// One request on a fresh stream; returns the status.
net::awaitable<unsigned> request(Runtime& runtime, const std::string& id, uint16_t port,
                                 const std::string& method, const std::string& target,
                                 const std::string& body, const std::string& token) {
  Socket socket = co_await runtime.connect(id, port);
  std::string head = method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  if (!token.empty()) head += "X-Access-Token: " + token + "\r\n";
  if (!body.empty()) head += "Content-Type: application/json\r\n";
  if (method != "GET") head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  head += "\r\n";
  head += body;
  co_await net::async_write(socket, net::buffer(head), net::use_awaitable);
  boost::beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 * 1024);
  co_await bhttp::async_read(socket, buffer, parser, net::use_awaitable);
  co_return parser.get().result_int();
}
}  // namespace

std::string init_body(const AgentInit& init) {
  nlohmann::json j;
  j["envVars"] = init.env_vars;
  if (!init.access_token.empty()) j["accessToken"] = init.access_token;
  j["defaultUser"] = init.default_user;
  j["defaultWorkdir"] = init.default_workdir;
  return j.dump();
}

net::awaitable<void> initialise_agent(Runtime& runtime, const std::string& id, uint16_t agent_port,
                                      const AgentInit& init, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  auto executor = co_await net::this_coro::executor;
  net::steady_timer timer(executor);
  std::string body = init_body(init);
  std::string stage = "init";
  // The agent is exec'd but may not listen yet: retry on refused connections, 1 ms apart.
  for (;;) {
    std::string error;
    try {
      std::string method = stage == "init" ? "POST" : "GET";
      std::string target = stage == "init" ? "/init" : "/health";
      std::string payload = stage == "init" ? body : std::string();
      unsigned status = co_await request(runtime, id, agent_port, method, target, payload, init.access_token);
      if (status == 204) {
        if (stage == "health") co_return;
        stage = "health";
        continue;
      }
      error = "answered " + std::to_string(status);
    } catch (const boost::system::system_error& e) {
      if (e.code() == boost::system::errc::no_such_process) throw RuntimeError("sandbox exited during start");
      error = e.code().message();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw RuntimeError("agent did not become ready (" + stage + ": " + error + ")");
    }
    timer.expires_after(std::chrono::milliseconds(1));
    co_await timer.async_wait(net::use_awaitable);
  }
}

}  // namespace cove::shim
