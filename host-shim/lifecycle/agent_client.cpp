#include "lifecycle/agent_client.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>

namespace cove::shim {
namespace {
namespace bhttp = boost::beast::http;

}  // namespace

net::awaitable<unsigned> agent_request(Runtime& runtime, const std::string& id, uint16_t port,
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

net::awaitable<void> quiesce_agent(Runtime& runtime, const std::string& id, uint16_t port,
                                   const std::string& token, std::chrono::milliseconds limit) {
  Socket socket = co_await runtime.connect(id, port);
  auto executor = co_await net::this_coro::executor;
  net::steady_timer deadline(executor);
  deadline.expires_after(limit);
  bool timed_out = false;
  deadline.async_wait([&socket, &timed_out](const boost::system::error_code& ec) {
    if (ec) return;
    timed_out = true;
    boost::system::error_code ignored;
    socket.cancel(ignored);
  });
  std::string head = "POST /freeze HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 0\r\n";
  if (!token.empty()) head += "X-Access-Token: " + token + "\r\n";
  head += "\r\n";
  boost::system::error_code ec;
  co_await net::async_write(socket, net::buffer(head), net::redirect_error(net::use_awaitable, ec));
  boost::beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 * 1024);
  if (!ec) co_await bhttp::async_read(socket, buffer, parser, net::redirect_error(net::use_awaitable, ec));
  unsigned status = ec ? 0 : parser.get().result_int();
  // The agent closes this connection last, after every other one: its EOF means it is done.
  char scratch[256];
  while (!ec) {
    co_await socket.async_read_some(net::buffer(scratch), net::redirect_error(net::use_awaitable, ec));
  }
  deadline.cancel();
  if (timed_out) throw RuntimeError("the agent did not let go of its connections in time");
  if (status != 204) {
    std::string body = status ? parser.get().body().substr(0, 200) : std::string();
    throw RuntimeError("the agent could not prepare for the pause (" + std::to_string(status) + ")" +
                       (body.empty() ? "" : ": " + body));
  }
}

std::string init_body(const AgentInit& init) {
  nlohmann::json j;
  j["envVars"] = init.env_vars;
  if (!init.access_token.empty()) j["accessToken"] = init.access_token;
  j["defaultUser"] = init.default_user;
  j["defaultWorkdir"] = init.default_workdir;
  if (init.with_timestamp) {
    auto now = std::chrono::system_clock::now();
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ns / 1000000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns % 1000000000));
    j["timestamp"] = buf;
  }
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
      const std::string& presented = init.previous_token.empty() ? init.access_token : init.previous_token;
      // After /init the agent holds the new token.
      const std::string& token = stage == "init" ? presented : init.access_token;
      unsigned status = co_await agent_request(runtime, id, agent_port, method, target, payload, token);
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
