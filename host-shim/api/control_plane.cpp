#include "api/control_plane.hpp"

#include <cctype>
#include <memory>

#include "api/errors.hpp"
#include "api/query_string.hpp"
#include "api/requests.hpp"
#include "api/responses.hpp"
#include "api/routes.hpp"
#include "api/template_requests.hpp"
#include "rootfs-builder/build_plan.hpp"

namespace cove::shim::api {
namespace {
using nlohmann::json;

constexpr std::string_view kJson = "application/json";
// GET /sandboxes (v1) returns every running sandbox; pages are followed up to this many.
constexpr int kMaxListPages = 1000;

class ControlPlane {
 public:
  ControlPlane(Lifecycle& lifecycle, ControlPlaneOptions options)
      : lifecycle_(lifecycle), options_(std::move(options)) {
    context_.client_id = options_.client_id;
    context_.domain = options_.domain;
  }

  net::awaitable<void> handle(http::Exchange& ex) {
    int status = 0;
    std::string message;
    try {
      co_await route(ex);
    } catch (const ApiError& e) {
      status = e.status;
      message = e.what();
    } catch (const LifecycleError& e) {
      status = e.status();
      message = e.what();
    } catch (const std::exception&) {
      // Details may name hosts, paths or secrets. (A broken connection lands here too; answering
      // it then fails and the server loop drops the connection.)
      status = 500;
      message = "Internal server error";
    }
    if (status != 0 && !ex.responded()) {
      ex.response_headers().erase("X-Next-Token");
      co_await respond_error(ex, status, message);
    }
  }

 private:
  net::awaitable<void> route(http::Exchange& ex) {
    RouteMatch match = match_route(ex.method(), ex.path());
    if (match.kind == RouteMatch::Kind::none) throw ApiError(404, "Not found");
    if (match.kind == RouteMatch::Kind::wrong_method) {
      ex.response_headers().set("Allow", match.allow);
      throw ApiError(405, "Method not allowed");
    }
    if (match.endpoint == Endpoint::health) {
      co_await ex.respond(200, "text/plain; charset=utf-8", "Health check successful");
      co_return;
    }
    if (match.endpoint == Endpoint::template_upload) {
      // The SDK PUTs to the link `files` returned, without its API key: the token is the credential.
      co_await upload(ex, match, QueryString(ex.query()));
      co_return;
    }
    if (match.endpoint == Endpoint::teams) {
      // Only an access token names a team here (E2B: the token's user's teams). The API key of
      // a team is only ever shown once, at creation, so it is not part of the answer.
      Team team = team_for_bearer(ex);
      json out = json::array({json{{"teamID", team.id}, {"name", team.name}, {"isDefault", true}}});
      co_await respond_json(ex, 200, out);
      co_return;
    }
    const std::string team = authenticate(ex, match);
    if (match.endpoint == Endpoint::unimplemented || (is_build_endpoint(match.endpoint) && !options_.builds)) {
      throw ApiError(501, std::string(ex.method()) + " " + match.pattern + " is not implemented");
    }
    const QueryString query(ex.query());
    const auto id = [&] { return parse_sandbox_id(match.params.at(0)); };

    switch (match.endpoint) {
      case Endpoint::create_v1:
      case Endpoint::create_v2: {
        const bool v1 = match.endpoint == Endpoint::create_v1;
        std::string body = co_await read_body(ex);
        CreateRequest request = parse_create_request(body, v1 ? ApiVersion::v1 : ApiVersion::v2,
                                                     v1 ? options_.v1_default_timeout_s : std::nullopt);
        SandboxView view = co_await lifecycle_.create(team, std::move(request));
        json out = sandbox_json(view, context_);  // named: GCC 12 and co_await operands
        co_await respond_json(ex, 201, out);
        co_return;
      }
      case Endpoint::connect_v1:
      case Endpoint::connect_v2:
      case Endpoint::resume: {
        std::string sandbox = id();
        std::string body = co_await read_body(ex);
        ConnectRequest request = parse_connect_request(
            body, match.endpoint == Endpoint::connect_v1 ? ApiVersion::v1 : ApiVersion::v2);
        if (match.endpoint == Endpoint::resume) {
          // The deprecated resume: like connect, but a running sandbox is a conflict (as E2B).
          SandboxView current = co_await lifecycle_.get(team, sandbox);
          if (current.record.state == SandboxState::running) {
            throw ApiError(409, "Sandbox \"" + sandbox + "\" is already running");
          }
        }
        auto [view, resumed] = co_await lifecycle_.connect(team, sandbox, request.timeout_s, request.memory);
        json out = sandbox_json(view, context_);
        co_await respond_json(ex, resumed ? 201 : 200, out);
        co_return;
      }
      case Endpoint::pause: {
        std::string sandbox = id();
        std::string body = co_await read_body(ex);
        bool memory = parse_pause_request(body);
        co_await lifecycle_.pause(team, sandbox, memory);
        co_await ex.respond(204, "", "");
        co_return;
      }
      case Endpoint::snapshot_create: {
        std::string sandbox = id();
        std::string body = co_await read_body(ex);
        std::string name = parse_snapshot_request(body);
        Snapshot snap = co_await lifecycle_.create_snapshot(team, sandbox, name);
        json out = snapshot_info_json(snap);
        co_await respond_json(ex, 201, out);
        co_return;
      }
      case Endpoint::snapshots_list: {
        std::string source = query.get("sandboxID").value_or("");
        if (!source.empty()) source = parse_sandbox_id(source);  // as in paths: `<id>-<clientID>` works
        std::string name = query.get("name").value_or("");
        auto snaps = co_await lifecycle_.list_snapshots(team, source, name);
        json items = json::array();
        for (const auto& snap : snaps) items.push_back(snapshot_info_json(snap));
        co_await respond_json(ex, 200, items);
        co_return;
      }
      case Endpoint::fork: {
        std::string sandbox = id();
        std::string body = co_await read_body(ex);
        ForkRequest request = parse_fork_request(body);
        auto outcomes = co_await lifecycle_.fork(team, sandbox, request.count, request.timeout_s);
        json items = json::array();
        for (const auto& outcome : outcomes) {
          if (outcome.sandbox) {
            items.push_back(json{{"sandbox", sandbox_json(*outcome.sandbox, context_)}});
          } else {
            items.push_back(json{{"error", json{{"code", outcome.error_code}, {"message", outcome.error_message}}}});
          }
        }
        co_await respond_json(ex, 201, items);
        co_return;
      }
      case Endpoint::get: {
        std::string sandbox = id();
        SandboxView view = co_await lifecycle_.get(team, sandbox);
        json out = sandbox_detail_json(view, context_);
        co_await respond_json(ex, 200, out);
        co_return;
      }
      case Endpoint::kill: {
        std::string sandbox = id();
        if (!co_await lifecycle_.kill(team, sandbox)) {
          throw ApiError(404, sandbox_not_found_message(sandbox));
        }
        co_await ex.respond(204, "", "");
        co_return;
      }
      case Endpoint::set_timeout: {
        std::string sandbox = id();
        std::string body = co_await read_body(ex);
        int64_t timeout = parse_timeout_request(body);
        co_await lifecycle_.set_timeout(team, sandbox, timeout);
        co_await ex.respond(204, "", "");
        co_return;
      }
      case Endpoint::refresh: {
        std::string sandbox = id();
        std::string body = co_await read_body(ex);
        int64_t duration = parse_refresh_request(body);
        co_await lifecycle_.refresh(team, sandbox, duration);
        co_await ex.respond(204, "", "");
        co_return;
      }
      case Endpoint::list_v1:
        co_await list_all_running(ex, team, query);
        co_return;
      case Endpoint::list_v2: {
        ListRequest request = parse_list_query(query, ApiVersion::v2);
        ListPage page = co_await lifecycle_.list(team, std::move(request));
        json items = json::array();
        for (const auto& view : page.items) items.push_back(listed_sandbox_json(view, context_));
        // The SDK's hasNext is `!!X-Next-Token`: present only when another page exists.
        if (page.next_token && !page.next_token->empty()) {
          ex.response_headers().set("X-Next-Token", *page.next_token);
        }
        co_await respond_json(ex, 200, items);
        co_return;
      }
      case Endpoint::metrics: {
        std::string sandbox = id();
        MetricsWindow window = parse_metrics_window(query);
        auto samples = co_await lifecycle_.metrics(team, sandbox, window.start, window.end);
        json items = json::array();
        for (const auto& s : samples) items.push_back(metric_json(s));
        co_await respond_json(ex, 200, items);
        co_return;
      }
      case Endpoint::metrics_many: {
        std::vector<std::string> ids = parse_sandbox_ids(query);
        auto latest = co_await lifecycle_.latest_metrics(team, std::move(ids));
        json sandboxes = json::object();
        for (const auto& [sandbox, sample] : latest) sandboxes[sandbox] = metric_json(sample);
        json body{{"sandboxes", std::move(sandboxes)}};  // named: GCC 12 and co_await operands
        co_await respond_json(ex, 200, body);
        co_return;
      }
      case Endpoint::templates: {
        // The CLI passes the team it means as ?teamID=; a credential reaches its own team only.
        if (auto wanted = query.get("teamID"); wanted && !wanted->empty() && *wanted != team) {
          throw ApiError(403, "You don't have access to this team");
        }
        json items = json::array();
        auto all = options_.builds ? options_.builds->list(team) : lifecycle_.templates();
        for (const auto& t : all) items.push_back(template_json(t));
        co_await respond_json(ex, 200, items);
        co_return;
      }
      case Endpoint::template_alias: {
        auto alias = path_unescape(match.params.at(0));
        if (!alias) throw bad_request("Invalid template alias");
        std::optional<Template> found;
        if (options_.builds) {
          auto [visibility, tpl] = options_.builds->alias(team, *alias);
          // Template.exists reads 403 as "exists, not yours".
          if (visibility == AliasVisibility::forbidden) throw ApiError(403, "You don't have access to this template");
          found = tpl;
        } else {
          found = lifecycle_.template_by_alias(*alias);
        }
        if (!found) throw ApiError(404, "Template alias not found");
        json out = template_alias_json(*found);
        co_await respond_json(ex, 200, out);
        co_return;
      }
      case Endpoint::template_register: {
        std::string body = co_await read_body(ex);
        TemplateRegistration registration = parse_template_registration(body);
        json out = registered_build_json(options_.builds->register_template(team, registration));
        co_await respond_json(ex, 202, out);
        co_return;
      }
      case Endpoint::template_files: {
        std::string tpl = segment(match, 0);
        std::string hash = segment(match, 1);
        UploadLink link = options_.builds->files(team, tpl, hash);
        json out{{"present", link.present}};
        if (!link.present) out["url"] = public_base(ex) + link.upload_target;
        co_await respond_json(ex, 201, out);
        co_return;
      }
      case Endpoint::build_start: {
        std::string tpl = segment(match, 0);
        std::string build = segment(match, 1);
        std::string body = co_await read_body(ex);
        builder::BuildPlan plan;
        try {
          plan = builder::parse_build_plan(body);
        } catch (const builder::BuildPlanError& e) {
          throw bad_request(e.what());
        }
        options_.builds->start_build(team, tpl, build, std::move(plan));
        // An empty 202 with Content-Length: 0 (openapi-fetch parses any other empty 2xx as JSON).
        co_await ex.respond(202, "", "");
        co_return;
      }
      case Endpoint::build_status: {
        std::string tpl = segment(match, 0);
        std::string build = segment(match, 1);
        size_t offset = 0;
        if (auto raw = query.get("logsOffset")) {
          try {
            size_t used = 0;
            long long v = std::stoll(*raw, &used);
            if (used != raw->size() || v < 0) throw std::invalid_argument("negative");
            offset = static_cast<size_t>(v);
          } catch (const std::exception&) {
            throw bad_request("logsOffset must be a non-negative integer");
          }
        }
        json out = build_status_json(options_.builds->status(team, tpl, build, offset));
        co_await respond_json(ex, 200, out);
        co_return;
      }
      case Endpoint::template_delete: {
        std::string tpl = segment(match, 0);
        // Snapshots are templates to clients (Sandbox.deleteSnapshot deletes /templates/<id>).
        if (co_await lifecycle_.delete_snapshot(team, tpl)) {
          co_await ex.respond(204, "", "");
          co_return;
        }
        if (!options_.builds) throw ApiError(404, "Template '" + tpl + "' not found");
        options_.builds->remove(team, tpl);
        co_await ex.respond(204, "", "");
        co_return;
      }
      case Endpoint::tags_assign: {
        std::string body = co_await read_body(ex);
        auto [target, tags] = parse_tags_assignment(body);
        auto [build, assigned] = options_.builds->assign_tags(team, target, tags);
        json out{{"buildID", build}, {"tags", assigned}};
        co_await respond_json(ex, 201, out);
        co_return;
      }
      case Endpoint::tags_remove: {
        std::string body = co_await read_body(ex);
        auto [name, tags] = parse_tags_removal(body);
        options_.builds->remove_tags(team, name, tags);
        co_await ex.respond(204, "", "");
        co_return;
      }
      case Endpoint::tags_list: {
        std::string tpl = segment(match, 0);
        json out = template_tags_json(options_.builds->tags(team, tpl));
        co_await respond_json(ex, 200, out);
        co_return;
      }
      case Endpoint::template_upload:
      case Endpoint::health:
      case Endpoint::teams:
      case Endpoint::unimplemented:
        break;  // answered above
    }
  }

  static bool is_build_endpoint(Endpoint e) {
    switch (e) {
      case Endpoint::template_register:
      case Endpoint::template_files:
      case Endpoint::template_upload:
      case Endpoint::build_start:
      case Endpoint::build_status:
      case Endpoint::tags_assign:
      case Endpoint::tags_remove:
      case Endpoint::tags_list:
        return true;
      default:
        return false;
    }
  }

  static std::string segment(const RouteMatch& match, size_t i) {
    auto value = path_unescape(match.params.at(i));
    if (!value || value->empty() || value->size() > 256) throw bad_request("Invalid path parameter");
    return *value;
  }

  // Where clients reach this API: https://api.<domain> through the edge, else the Host they used.
  std::string public_base(const http::Exchange& ex) const {
    std::string host(ex.header("Host"));
    if (!options_.domain.empty() && host == "api." + options_.domain) return "https://" + host;
    return "http://" + host;
  }

  net::awaitable<void> upload(http::Exchange& ex, const RouteMatch& match, const QueryString& query) {
    if (!options_.builds) throw ApiError(501, "PUT " + match.pattern + " is not implemented");
    std::string tpl = segment(match, 0);
    std::string hash = segment(match, 1);
    std::string token = query.get("token").value_or("");
    // Named: GCC 12 destroys temporaries in a co_await operand twice.
    std::function<net::awaitable<size_t>(char*, size_t)> read_some = [&ex](char* data, size_t capacity) {
      return ex.read_body_some(data, capacity);
    };
    co_await options_.builds->upload(tpl, hash, token, read_some);
    co_await ex.respond(201, "", "");
  }

  // The credential of `Authorization: Bearer <credential>` (scheme case-insensitive, RFC 9110);
  // nullopt without such a header.
  static std::optional<std::string> bearer_credential(const http::Exchange& ex) {
    std::string_view value = ex.header("Authorization");
    constexpr std::string_view kScheme = "bearer ";
    if (value.size() < kScheme.size()) return std::nullopt;
    for (size_t i = 0; i < kScheme.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(value[i])) != kScheme[i]) return std::nullopt;
    }
    value.remove_prefix(kScheme.size());
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    return std::string(value);
  }

  Team team_for_bearer(const http::Exchange& ex) {
    auto token = bearer_credential(ex);
    if (!token) throw ApiError(401, "Access token is missing");
    auto team = lifecycle_.team_for_access_token(*token);
    if (!team) throw ApiError(401, "Invalid access token");
    return *team;
  }

  // X-API-Key; on the operations the spec opens to access tokens (the template ones), also
  // `Authorization: Bearer <access token>`, which E2B's CLI sends from E2B_ACCESS_TOKEN. The CLI
  // sends both when both are set: either valid one admits the request, the token tried first.
  std::string authenticate(const http::Exchange& ex, const RouteMatch& match) {
    std::string_view key = ex.header("X-API-Key");  // header names compare case-insensitively
    if (auto token = match.access_token ? bearer_credential(ex) : std::nullopt) {
      if (auto team = lifecycle_.team_for_access_token(*token)) return team->id;
      if (key.empty()) throw ApiError(401, "Invalid access token");
    }
    if (key.empty()) throw ApiError(401, "API key is missing");
    auto team = lifecycle_.team_for_api_key(std::string(key));
    if (!team) throw ApiError(401, "Invalid API key");
    return *team;
  }

  net::awaitable<std::string> read_body(http::Exchange& ex) {
    auto body = co_await ex.read_body_all(options_.max_body_bytes);
    if (!body) throw ApiError(413, "Request body too large");
    co_return std::move(*body);
  }

  // v1 list: every running sandbox of the team in one array, so the lifecycle's pages are followed.
  net::awaitable<void> list_all_running(http::Exchange& ex, const std::string& team, const QueryString& query) {
    const ListRequest first = parse_list_query(query, ApiVersion::v1);
    json items = json::array();
    std::optional<std::string> token;
    for (int page_no = 0; page_no < kMaxListPages; ++page_no) {
      ListRequest request = first;
      request.next_token = token;
      ListPage page = co_await lifecycle_.list(team, std::move(request));
      for (const auto& view : page.items) items.push_back(listed_sandbox_json(view, context_));
      if (!page.next_token || page.next_token->empty() || page.next_token == token) break;
      token = std::move(page.next_token);
    }
    co_await respond_json(ex, 200, items);
  }

  static net::awaitable<void> respond_json(http::Exchange& ex, unsigned status, const json& body) {
    std::string text = dump(body);
    co_await ex.respond(status, kJson, std::move(text));
  }

  static net::awaitable<void> respond_error(http::Exchange& ex, int status, const std::string& message) {
    std::string text = error_body(status, message);
    co_await ex.respond(static_cast<unsigned>(status), kJson, std::move(text));
  }

  Lifecycle& lifecycle_;
  ControlPlaneOptions options_;
  ResponseContext context_;
};

}  // namespace

http::Handler make_control_plane(Lifecycle& lifecycle, ControlPlaneOptions options) {
  auto plane = std::make_shared<ControlPlane>(lifecycle, std::move(options));
  return [plane](http::Exchange& ex) { return plane->handle(ex); };
}

}  // namespace cove::shim::api
