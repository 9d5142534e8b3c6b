#include "cli/admin.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "api/timestamps.hpp"

namespace cove::shim {

std::string admin_socket_path(const std::string& state_dir) { return state_dir + "/admin.sock"; }

http::Handler make_admin_handler(SandboxManager& manager) {
  return [&manager](http::Exchange& ex) -> net::awaitable<void> {
    const std::string operator_team(kOperatorTeam);
    std::string path(ex.path());
    if (ex.method() == "GET" && path == "/sandboxes") {
      ListRequest request;
      request.limit = 1000;
      auto page = co_await manager.list(operator_team, request);
      nlohmann::json out = nlohmann::json::array();
      for (auto& v : page.items) {
        auto& r = v.record;
        out.push_back({{"sandboxID", r.id},
                       {"templateID", r.template_id},
                       {"teamID", r.team_id},
                       {"state", std::string(to_string(r.state))},
                       {"startedAt", api::format_rfc3339(r.started_at)},
                       {"endAt", api::format_rfc3339(r.end_at)}});
      }
      std::string body = out.dump();
      std::string type = "application/json";
      co_await ex.respond(200, type, std::move(body));
      co_return;
    }
    const std::string prefix = "/sandboxes/";
    if (ex.method() == "DELETE" && path.rfind(prefix, 0) == 0) {
      std::string id = path.substr(prefix.size());
      bool killed = co_await manager.kill(operator_team, id);
      std::string body = killed ? std::string()
                                : nlohmann::json{{"code", 404}, {"message", sandbox_not_found_message(id)}}.dump();
      unsigned status = killed ? 204 : 404;
      std::string type = killed ? "" : "application/json";
      co_await ex.respond(status, type, std::move(body));
      co_return;
    }
    std::string body = R"({"code":404,"message":"not found"})";
    std::string type = "application/json";
    co_await ex.respond(404, type, std::move(body));
  };
}

std::pair<unsigned, std::string> admin_request(const std::string& state_dir, const std::string& method,
                                               const std::string& target) {
  namespace bhttp = boost::beast::http;
  boost::asio::io_context io;
  boost::asio::local::stream_protocol::socket socket(io);
  boost::system::error_code ec;
  socket.connect(admin_socket_path(state_dir), ec);
  if (ec) throw std::runtime_error("the shim is not running (no admin socket in the state directory)");
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n";
  if (method != "GET") request += "Content-Length: 0\r\n";
  request += "\r\n";
  boost::asio::write(socket, boost::asio::buffer(request));
  boost::beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> response;
  bhttp::read(socket, buffer, response);
  return {response.result_int(), response.body()};
}

}  // namespace cove::shim
