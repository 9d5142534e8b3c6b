#include "cli/admin.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "api/template_requests.hpp"
#include "api/timestamps.hpp"

namespace cove::shim {

std::string admin_socket_path(const std::string& state_dir) { return state_dir + "/admin.sock"; }

namespace {

// Built-in template builds: POST /templates (a definition) and GET /templates/<id>/builds/<b>/status.
net::awaitable<bool> template_request(http::Exchange& ex, TemplateService& templates) {
  std::string path(ex.path());
  unsigned status = 200;
  nlohmann::json out;
  try {
    if (ex.method() == "POST" && path == "/templates") {
      auto body = co_await ex.read_body_all(1 << 20);
      if (!body) throw LifecycleError(LifecycleErrc::bad_request, "the definition is too large");
      builder::TemplateDefinition def = builder::parse_template_definition(*body);
      RegisteredBuild build = templates.register_builtin(def);
      templates.start_builtin_build(build.template_id, build.build_id, def.plan);
      out = {{"templateID", build.template_id}, {"buildID", build.build_id}};
      status = 202;
    } else if (ex.method() == "GET" && path.rfind("/templates/", 0) == 0) {
      // /templates/<id>/builds/<build>/status
      std::vector<std::string> parts;
      for (size_t start = 1, slash; start <= path.size(); start = slash + 1) {
        slash = path.find('/', start);
        if (slash == std::string::npos) slash = path.size();
        parts.push_back(path.substr(start, slash - start));
      }
      if (parts.size() != 5 || parts[2] != "builds" || parts[4] != "status") co_return false;
      size_t offset = 0;
      std::string query(ex.query());
      if (query.rfind("logsOffset=", 0) == 0) offset = std::stoul(query.substr(11));
      out = api::build_status_json(templates.builtin_status(parts[1], parts[3], offset));
    } else {
      co_return false;
    }
  } catch (const LifecycleError& e) {
    status = e.status();
    out = {{"code", e.status()}, {"message", e.what()}};
  } catch (const builder::BuildPlanError& e) {
    status = 400;
    out = {{"code", 400}, {"message", e.what()}};
  } catch (const std::logic_error&) {
    status = 400;
    out = {{"code", 400}, {"message", "bad request"}};
  }
  std::string text = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string type = "application/json";
  co_await ex.respond(status, type, std::move(text));
  co_return true;
}

}  // namespace

http::Handler make_admin_handler(SandboxManager& manager, TemplateService& templates) {
  return [&manager, &templates](http::Exchange& ex) -> net::awaitable<void> {
    const std::string operator_team(kOperatorTeam);
    std::string path(ex.path());
    if (path.rfind("/templates", 0) == 0 && co_await template_request(ex, templates)) co_return;
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
    const std::string checkpoint_suffix = "/checkpoint";
    if (ex.method() == "POST" && path.rfind(prefix, 0) == 0 && path.size() > prefix.size() + checkpoint_suffix.size() &&
        path.compare(path.size() - checkpoint_suffix.size(), checkpoint_suffix.size(), checkpoint_suffix) == 0) {
      std::string id = path.substr(prefix.size(), path.size() - prefix.size() - checkpoint_suffix.size());
      unsigned status = 204;
      std::string body;
      try {
        co_await manager.make_cold(operator_team, id);
      } catch (const LifecycleError& e) {
        status = e.status();
        body = nlohmann::json{{"code", e.status()}, {"message", e.what()}}.dump();
      }
      std::string type = body.empty() ? "" : "application/json";
      co_await ex.respond(status, type, std::move(body));
      co_return;
    }
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
                                               const std::string& target, const std::string& body) {
  namespace bhttp = boost::beast::http;
  boost::asio::io_context io;
  boost::asio::local::stream_protocol::socket socket(io);
  boost::system::error_code ec;
  socket.connect(admin_socket_path(state_dir), ec);
  if (ec) throw std::runtime_error("the shim is not running (no admin socket in the state directory)");
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n";
  if (method != "GET") request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  request += "\r\n" + body;
  boost::asio::write(socket, boost::asio::buffer(request));
  boost::beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> response;
  bhttp::read(socket, buffer, response);
  return {response.result_int(), response.body()};
}

}  // namespace cove::shim
