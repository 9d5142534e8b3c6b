#include "agent.hpp"

#include "filesystem/watcher.hpp"
#include "rest/files.hpp"
#include "rest/json_error.hpp"
#include "rpc/filesystem_service.hpp"
#include "rpc/process_service.hpp"
#include "system/basic_auth.hpp"

namespace cove {
namespace {

constexpr std::string_view kExposedHeaders =
    "Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin, Location, Cache-Control, X-Content-Type-Options";

// envd's token exemptions (METHOD+PATH).
bool token_exempt(std::string_view method, std::string_view path) {
  return (method == "GET" && path == "/health") || (method == "GET" && path == "/files") ||
         (method == "POST" && path == "/files") || (method == "POST" && path == "/init");
}

// inotify watches cannot be checkpointed reliably (on overlayfs CRIU cannot resolve what they
// watch): every watcher closes its descriptor on /freeze and watches again on /init.
class WatcherQuiescence final : public system::Quiescent {
 public:
  net::awaitable<std::string> let_go(int) override {
    filesystem::Watcher::suspend_all();
    co_return std::string();
  }
  void take_back() override { filesystem::Watcher::resume_all(); }
};

}  // namespace

Agent::Agent(net::any_io_executor executor, AgentOptions options)
    : options_(std::move(options)),
      watchers_(std::make_unique<WatcherQuiescence>()),
      users_(options_.etc_dir),
      processes_(executor) {
  quiesce_.add(*watchers_);
  rest::register_endpoints(rest_, std::make_shared<rest::EndpointDeps>(rest::EndpointDeps{
                                      state_, metrics_, options_.envd_version, options_.clock_sync, quiesce_}));
  auto resolver = [this](const http::Exchange& ex, rpc::Status& st) { return resolve_user(ex, st); };
  rest::register_file_endpoints(rest_, std::make_shared<rest::FileEndpointDeps>(rest::FileEndpointDeps{state_, users_}));
  rpc::register_process_service(rpc_, rpc::ProcessServiceDeps{processes_, state_, resolver, options_.child_path});
  rpc::register_filesystem_service(rpc_, rpc::FilesystemServiceDeps{state_, users_, resolver});
}

void Agent::start() { processes_.start_reaper(); }

std::optional<system::User> Agent::resolve_user(const http::Exchange& ex, rpc::Status& error) const {
  if (auto name = system::basic_auth_username(ex.header("Authorization"))) {
    if (auto user = users_.lookup(*name)) return user;
    error = {rpc::Code::unauthenticated, "invalid username: '" + *name + "'"};
    return std::nullopt;
  }
  if (auto user = users_.lookup(state_.default_user())) return user;
  error = {rpc::Code::unauthenticated, "invalid default user: '" + state_.default_user() + "'"};
  return std::nullopt;
}

net::awaitable<void> Agent::handle(http::Exchange& ex) {
  // CORS, outermost, as envd (rs/cors): preflights never reach auth.
  if (ex.has_header("Origin")) {
    auto& h = ex.response_headers();
    h.set("Vary", "Origin");
    h.set("Access-Control-Allow-Origin", "*");
    if (ex.method() == "OPTIONS" && ex.has_header("Access-Control-Request-Method")) {
      h.set("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
      h.set("Access-Control-Allow-Methods", std::string(ex.header("Access-Control-Request-Method")));
      if (ex.has_header("Access-Control-Request-Headers")) {
        h.set("Access-Control-Allow-Headers", std::string(ex.header("Access-Control-Request-Headers")));
      }
      h.set("Access-Control-Max-Age", "7200");
      co_await ex.respond(204, "", "");
      co_return;
    }
    h.set("Access-Control-Expose-Headers", std::string(kExposedHeaders));
  }

  if (state_.has_token() && !token_exempt(ex.method(), ex.path()) &&
      !state_.token_matches(ex.header("X-Access-Token"))) {
    static const std::string kUnauthorized =
        "unauthorized access, please provide a valid access token or method signing if supported";
    co_await rest::respond_json_error(ex, 401, kUnauthorized);
    co_return;
  }

  // A Basic-auth user that does not exist is refused on every path, in that path's protocol.
  if (auto name = system::basic_auth_username(ex.header("Authorization")); name && !users_.lookup(*name)) {
    const std::string message = "invalid username: '" + *name + "'";  // named: see rpc/connect.cpp
    co_await reject_unauthenticated(ex, message);
    co_return;
  }

  if (rpc_.handles(ex.path())) {
    co_await rpc_.serve(ex);
    co_return;
  }
  http::Router::Match match;
  if (const auto* fn = rest_.match(ex.method(), ex.path(), match)) {
    co_await (*fn)(ex);
    co_return;
  }
  if (match == http::Router::Match::wrong_method) {
    co_await ex.respond(405, "", "");
  } else {
    ex.response_headers().set("X-Content-Type-Options", "nosniff");
    co_await ex.respond(404, "text/plain; charset=utf-8", "404 page not found\n");
  }
}

net::awaitable<void> Agent::reject_unauthenticated(http::Exchange& ex, const std::string& message) {
  rpc::Status status{rpc::Code::unauthenticated, message};
  if (rpc_.is_streaming(ex.path())) {
    auto codec = rpc::codec_for_content_type(ex.header("Content-Type"), true).value_or(rpc::Codec::json);
    ex.close_after();  // the request body is left unread
    co_await rpc::ConnectRouter::reject(ex, true, codec, status);
  } else {
    co_await rpc::ConnectRouter::reject(ex, false, rpc::Codec::json, status);
  }
}

}  // namespace cove
