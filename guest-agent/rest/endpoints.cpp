#include "rest/endpoints.hpp"

#include <sys/prctl.h>
#include <time.h>

#include <nlohmann/json.hpp>

#include "rest/json_error.hpp"
#include "system/rfc3339.hpp"

namespace cove::rest {
namespace {
constexpr size_t kInitBodyLimit = 1 << 20;

void maybe_correct_clock(std::chrono::system_clock::time_point host_time) {
  // envd's window: tolerate 50 ms ahead of the host, 5 s behind.
  auto now = std::chrono::system_clock::now();
  if (now >= host_time - std::chrono::milliseconds(50) && now <= host_time + std::chrono::seconds(5)) return;
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(host_time.time_since_epoch()).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  clock_settime(CLOCK_REALTIME, &ts);
}
// envd refuses a token written with any JSON escape (its raw text may not contain '\\'), so the
// check must look at the raw body: after decoding, "\u0061" and "a" are indistinguishable.
// Scans the top-level object for the raw value of "accessToken".
bool raw_token_has_escape(std::string_view body) {
  int depth = 0;
  bool expect_key = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '{' || c == '[') {
      ++depth;
      expect_key = (c == '{' && depth == 1);
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 1) {
      expect_key = true;
    } else if (c == '"') {
      size_t start = ++i;
      while (i < body.size() && body[i] != '"') i += body[i] == '\\' ? 2 : 1;
      std::string_view raw = body.substr(start, i - start);
      if (depth != 1 || !expect_key) continue;
      expect_key = false;
      size_t j = body.find_first_not_of(" \t\r\n", i + 1);
      if (j == std::string_view::npos || body[j] != ':') continue;
      j = body.find_first_not_of(" \t\r\n", j + 1);
      if (raw != "accessToken" || j == std::string_view::npos || body[j] != '"') continue;
      for (size_t k = j + 1; k < body.size() && body[k] != '"'; ++k) {
        if (body[k] == '\\') return true;
      }
    }
  }
  return false;
}
}  // namespace

bool parse_init_body(std::string_view body, system::InitRequest& out) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return true;  // empty body is allowed
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_null()) return true;  // `null`, like an empty body, sets nothing
  if (j.is_discarded() || !j.is_object()) return false;
  if (raw_token_has_escape(body)) return false;
  try {
    if (auto it = j.find("envVars"); it != j.end() && !it->is_null()) {
      out.env_vars = it->get<std::map<std::string, std::string>>();
    }
    if (auto it = j.find("accessToken"); it != j.end() && !it->is_null()) {
      auto token = it->get<std::string>();
      if (token.empty() || token.find('\\') != std::string::npos) return false;
      out.access_token = token;
    }
    if (auto it = j.find("timestamp"); it != j.end() && !it->is_null()) {
      auto ts = system::parse_rfc3339(it->get<std::string>());
      if (!ts) return false;
      out.timestamp = ts;
    }
    if (auto it = j.find("defaultUser"); it != j.end() && !it->is_null()) out.default_user = it->get<std::string>();
    if (auto it = j.find("defaultWorkdir"); it != j.end() && !it->is_null()) {
      out.default_workdir = it->get<std::string>();
    }
  } catch (const nlohmann::json::exception&) {
    return false;  // wrong types
  }
  return true;
}

void register_endpoints(http::Router& router, std::shared_ptr<EndpointDeps> d) {
  router.add("GET", "/health", [](http::Exchange& ex) -> http::net::awaitable<void> {
    ex.response_headers().set("Cache-Control", "no-store");
    co_await ex.respond(204, "", "");
  });

  router.add("POST", "/init", [d](http::Exchange& ex) -> http::net::awaitable<void> {
    ex.response_headers().set("X-Envd-Version", d->envd_version);
    auto body = co_await ex.read_body_all(kInitBodyLimit);
    system::InitRequest req;
    if (!body || !parse_init_body(*body, req)) {
      co_await ex.respond(400, "", "");
      co_return;
    }
    if (ex.has_header("X-Access-Token")) req.presented_token = std::string(ex.header("X-Access-Token"));
    switch (d->state.apply_init(req)) {
      case system::InitOutcome::unauthorized_reset:
        co_await ex.respond(401, "text/plain; charset=utf-8", "access token reset not authorized");
        co_return;
      case system::InitOutcome::token_mismatch:
        co_await ex.respond(401, "text/plain; charset=utf-8", "access token validation failed");
        co_return;
      case system::InitOutcome::applied:
        if (d->clock_sync && req.timestamp) maybe_correct_clock(*req.timestamp);
        break;
      case system::InitOutcome::stale:
        break;
    }
    // The host sends /init after every resume or restore: take back what /freeze let go.
    d->quiesce.resume();
    ex.response_headers().set("Cache-Control", "no-store");
    co_await ex.respond(204, "", "");
  });

  router.add("GET", "/envs", [d](http::Exchange& ex) -> http::net::awaitable<void> {
    nlohmann::json j = d->state.global_env();
    ex.response_headers().set("Cache-Control", "no-store");
    co_await ex.respond(200, "application/json", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  });

  router.add("GET", "/metrics", [d](http::Exchange& ex) -> http::net::awaitable<void> {
    auto sample = d->metrics.sample();
    if (!sample) {
      co_await ex.respond(500, "", "");
      co_return;
    }
    ex.response_headers().set("Cache-Control", "no-store");
    co_await ex.respond(200, "application/json", system::MetricsSampler::to_json(*sample));
  });

  // Before the host freezes or checkpoints the sandbox: let go of what CRIU cannot dump
  // (system/quiesce.hpp). The connection carrying this request is closed once the 204 is
  // written, so a host that reads to EOF knows everything has been let go.
  router.add("POST", "/freeze", [d](http::Exchange& ex) -> http::net::awaitable<void> {
    ex.close_after();
    // A process restored by CRIU is left non-dumpable, and the host cannot checkpoint a
    // non-dumpable process again: the agent, at least, makes itself dumpable once more.
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    const int request_fd = ex.socket().native_handle();
    std::string problem = co_await d->quiesce.freeze(request_fd);
    if (!problem.empty()) {
      const std::string message = "freeze: " + problem;  // named: see rpc/connect.cpp
      co_await respond_json_error(ex, 500, message);
      co_return;
    }
    ex.response_headers().set("Cache-Control", "no-store");
    co_await ex.respond(204, "", "");
  });

  // The pause was abandoned: take back what /freeze let go, as /init does.
  router.add("POST", "/unfreeze", [d](http::Exchange& ex) -> http::net::awaitable<void> {
    d->quiesce.resume();
    ex.response_headers().set("Cache-Control", "no-store");
    co_await ex.respond(204, "", "");
  });

  // Acknowledged: no filesystem freeze is needed in a container (the host keeps its upper dir).
  for (const char* path : {"/fsfreeze", "/fsthaw"}) {
    router.add("POST", path, [](http::Exchange& ex) -> http::net::awaitable<void> {
      co_await ex.respond(204, "", "");
    });
  }
}

}  // namespace cove::rest
