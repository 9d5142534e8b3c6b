#include "interpreter/http_api.hpp"

#include <openssl/crypto.h>

#include <nlohmann/json.hpp>

#include "interpreter/cell_run.hpp"
#include "interpreter/envd_env.hpp"
#include "interpreter/languages.hpp"

namespace cove::interpreter {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kText = "text/plain; charset=utf-8";
constexpr size_t kBodyLimit = 64u << 20;

// FastAPI's validation answer: 422 {"detail":[{type, loc, msg, input}]}.
Json validation_detail(std::string type, Json loc, std::string msg, Json input) {
  return Json{{"type", std::move(type)}, {"loc", std::move(loc)}, {"msg", std::move(msg)}, {"input", std::move(input)}};
}

net::awaitable<void> respond_json(http::Exchange& ex, unsigned status, const Json& body) {
  std::string text = body.dump(-1, ' ', true, Json::error_handler_t::replace);
  co_await ex.respond(status, kJson, std::move(text));
}

net::awaitable<void> respond_text(http::Exchange& ex, unsigned status, const std::string& text) {
  co_await ex.respond(status, kText, text);
}

// GCC 12 mishandles braced JSON literals inside coroutines: they are built out here.
Json invalid_json_answer() {
  Json detail = validation_detail("json_invalid", Json::array({"body", 0}), "JSON decode error", Json::object());
  detail["ctx"] = Json{{"error", "Expecting value"}};
  return Json{{"detail", Json::array({detail})}};
}

Json not_an_object_answer(const Json& body) {
  return Json{{"detail", Json::array({validation_detail("model_attributes_type", Json::array({"body"}),
                                                        "Input should be a valid dictionary or object to extract fields from",
                                                        body)})}};
}

Json detail_answer(const Json& details) { return Json{{"detail", details}}; }

Json context_json(const Context& c) { return Json{{"id", c.id}, {"language", c.language}, {"cwd", c.cwd}}; }

Json unauthorized_answer() {
  return Json{{"code", 401},
              {"message", "unauthorized access, please provide a valid access token or method signing if supported"}};
}

// The /execute body, validated as FastAPI's model would be; problems are appended to `details`.
struct ExecuteBody {
  std::string code;
  std::optional<std::string> context_id, language;
  std::map<std::string, std::string> env_vars;
};

bool optional_string(const Json& body, const char* key, std::optional<std::string>& out, Json& details);

ExecuteBody parse_execute_body(const Json& body, Json& details) {
  ExecuteBody parsed;
  if (!body.is_object()) {
    details.push_back(validation_detail("model_attributes_type", Json::array({"body"}),
                                        "Input should be a valid dictionary or object to extract fields from", body));
    return parsed;
  }
  auto code = body.find("code");
  if (code == body.end()) {
    details.push_back(validation_detail("missing", Json::array({"body", "code"}), "Field required", body));
  } else if (!code->is_string()) {
    details.push_back(validation_detail("string_type", Json::array({"body", "code"}), "Input should be a valid string", *code));
  } else {
    parsed.code = code->get<std::string>();
  }
  optional_string(body, "context_id", parsed.context_id, details);
  optional_string(body, "language", parsed.language, details);
  if (auto env = body.find("env_vars"); env != body.end() && !env->is_null()) {
    if (!env->is_object()) {
      details.push_back(validation_detail("dict_type", Json::array({"body", "env_vars"}), "Input should be a valid dictionary", *env));
    } else {
      for (auto it = env->begin(); it != env->end(); ++it) {
        if (it->is_string()) {
          parsed.env_vars[it.key()] = it->get<std::string>();
        } else {
          details.push_back(validation_detail("string_type", Json::array({"body", "env_vars", it.key()}),
                                              "Input should be a valid string", *it));
        }
      }
    }
  }
  return parsed;
}

// Reads the body as JSON; an empty body is `empty`. Answers 422 (or 413) itself and returns
// nullopt when it is not usable.
net::awaitable<std::optional<Json>> read_json_body(http::Exchange& ex, Json empty) {
  auto body = co_await ex.read_body_all(kBodyLimit);
  if (!body) {
    const std::string message = "Request body too large";
    co_await respond_text(ex, 413, message);
    co_return std::nullopt;
  }
  if (body->find_first_not_of(" \t\r\n") == std::string::npos) co_return empty;
  auto parsed = Json::parse(*body, nullptr, false);
  if (parsed.is_discarded()) {
    const Json answer = invalid_json_answer();
    co_await respond_json(ex, 422, answer);
    co_return std::nullopt;
  }
  co_return parsed;
}

// Optional string field: absent or null → nullopt; anything else but a string is a 422 detail.
bool optional_string(const Json& body, const char* key, std::optional<std::string>& out, Json& details) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_string()) {
    details.push_back(validation_detail("string_type", Json::array({"body", key}), "Input should be a valid string", *it));
    return false;
  }
  out = it->get<std::string>();
  return true;
}

class ExchangeOutput final : public CellOutput {
 public:
  explicit ExchangeOutput(http::Exchange& ex) : ex_(ex) {}
  void watch_client(async::Event* wake) override { ex_.watch_peer(wake); }
  bool client_gone() const override { return ex_.peer_gone(); }
  net::awaitable<bool> write(const std::string& line) override { co_return co_await ex_.write_chunk(line); }

 private:
  http::Exchange& ex_;
};

}  // namespace

HttpApi::HttpApi(net::any_io_executor executor, ContextRegistry& contexts, HttpApiOptions options)
    : executor_(std::move(executor)), contexts_(contexts), options_(options) {}

net::awaitable<void> HttpApi::handle(http::Exchange& ex) {
  // CORS open, as the official server's middleware (allow all origins, methods and headers).
  if (ex.has_header("Origin")) {
    ex.response_headers().set("Access-Control-Allow-Origin", "*");
    if (ex.method() == "OPTIONS" && ex.has_header("Access-Control-Request-Method")) {
      auto& h = ex.response_headers();
      h.set("Vary", "Origin");
      h.set("Access-Control-Allow-Methods", "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
      h.set("Access-Control-Max-Age", "600");
      if (ex.has_header("Access-Control-Request-Headers")) {
        h.set("Access-Control-Allow-Headers", std::string(ex.header("Access-Control-Request-Headers")));
      }
      const std::string message = "OK";
      co_await respond_text(ex, 200, message);
      co_return;
    }
  }

  const std::string path(ex.path());
  const std::string method(ex.method());
  auto route = [&](std::string_view want_method) -> int {
    return method == want_method ? 1 : -1;  // -1: the path exists, the method does not
  };
  int matched = 0;
  std::string id;
  if (path == "/health") {
    matched = route("GET");
    if (matched > 0) co_await health(ex);
  } else if (path == "/execute") {
    matched = route("POST");
    if (matched > 0) co_await execute(ex);
  } else if (path == "/contexts") {
    if (method == "GET") {
      matched = 1;
      co_await list_contexts(ex);
    } else {
      matched = route("POST");
      if (matched > 0) co_await create_context(ex);
    }
  } else if (path.rfind("/contexts/", 0) == 0) {
    std::string rest = path.substr(10);
    constexpr std::string_view kRestart = "/restart";
    if (rest.size() > kRestart.size() && rest.compare(rest.size() - kRestart.size(), kRestart.size(), kRestart) == 0 &&
        rest.find('/') == rest.size() - kRestart.size()) {
      matched = route("POST");
      if (matched > 0) co_await restart_context(ex, rest.substr(0, rest.size() - kRestart.size()));
    } else if (!rest.empty() && rest.find('/') == std::string::npos) {
      matched = route("DELETE");
      if (matched > 0) co_await remove_context(ex, rest);
    }
  }
  if (matched == 0) {
    const Json body = detail_answer("Not Found");
    co_await respond_json(ex, 404, body);
  } else if (matched < 0) {
    const Json body = detail_answer("Method Not Allowed");
    co_await respond_json(ex, 405, body);
  }
}

net::awaitable<void> HttpApi::health(http::Exchange& ex) {
  const Json ok = std::string("OK");
  co_await respond_json(ex, 200, ok);
}

net::awaitable<void> HttpApi::list_contexts(http::Exchange& ex) {
  Json list = Json::array();
  for (const auto& c : contexts_.list()) list.push_back(context_json(*c));
  co_await respond_json(ex, 200, list);
}

net::awaitable<void> HttpApi::create_context(http::Exchange& ex) {
  const Json empty = Json::object();
  auto body = co_await read_json_body(ex, empty);
  if (!body) co_return;
  if (!body->is_object()) {
    const Json answer = not_an_object_answer(*body);
    co_await respond_json(ex, 422, answer);
    co_return;
  }
  std::optional<std::string> language, cwd;
  Json details = Json::array();
  optional_string(*body, "language", language, details);
  optional_string(*body, "cwd", cwd, details);
  if (!details.empty()) {
    const Json answer = detail_answer(details);
    co_await respond_json(ex, 422, answer);
    co_return;
  }
  std::string normalized = normalize_language(language.value_or(""));
  std::string directory = cwd ? *cwd : ContextRegistry::default_cwd();
  std::shared_ptr<Context> context;
  std::string failure;
  try {
    context = co_await contexts_.create(normalized, directory);
  } catch (const ContextError& e) {
    failure = e.what();
  }
  if (!context) {
    co_await respond_text(ex, 500, failure);
    co_return;
  }
  const Json answer = context_json(*context);
  co_await respond_json(ex, 200, answer);
}

net::awaitable<void> HttpApi::restart_context(http::Exchange& ex, const std::string& id) {
  auto context = contexts_.find(id);
  if (!context) {
    const std::string message = "Context " + id + " not found";
    co_await respond_text(ex, 404, message);
    co_return;
  }
  bool restarted = true;
  try {
    co_await context->kernel->restart();
  } catch (const std::exception&) {
    restarted = false;
  }
  // A new kernel state: the sandbox-wide variables are applied again on its next run.
  context->globals_applied = false;
  if (!restarted) {
    const std::string message = "Failed to restart context " + id;
    co_await respond_text(ex, 500, message);
    co_return;
  }
  const Json null_body = nullptr;
  co_await respond_json(ex, 200, null_body);
}

net::awaitable<void> HttpApi::remove_context(http::Exchange& ex, const std::string& id) {
  if (!co_await contexts_.remove(id)) {
    const std::string message = "Context " + id + " not found";
    co_await respond_text(ex, 404, message);
    co_return;
  }
  const Json null_body = nullptr;
  co_await respond_json(ex, 200, null_body);
}

net::awaitable<void> HttpApi::execute(http::Exchange& ex) {
  const Json empty = Json::object();
  auto body = co_await read_json_body(ex, empty);
  if (!body) co_return;
  Json details = Json::array();
  ExecuteBody parsed = parse_execute_body(*body, details);
  if (!details.empty()) {
    const Json answer = detail_answer(details);
    co_await respond_json(ex, 422, answer);
    co_return;
  }
  const auto& context_id = parsed.context_id;
  const auto& language = parsed.language;
  CellRequest request{std::move(parsed.code), std::move(parsed.env_vars)};
  if (context_id && language) {
    const std::string message = "Only one of context_id or language can be provided";
    co_await respond_text(ex, 400, message);
    co_return;
  }

  // The token is checked by the agent itself (its /envs), as E2B's server forwards it to envd.
  std::optional<std::string> token;
  if (ex.has_header("X-Access-Token")) token = std::string(ex.header("X-Access-Token"));
  const std::string presented = token.value_or("");
  bool known = accepted_token_ && accepted_token_->size() == presented.size() &&
               CRYPTO_memcmp(accepted_token_->data(), presented.data(), presented.size()) == 0;
  if (!known) {
    auto check = co_await fetch_global_env(executor_, options_.envd_port, token);
    if (check.outcome == EnvdEnvResult::Outcome::unauthorized) {
      const Json answer = unauthorized_answer();
      co_await respond_json(ex, 401, answer);
      co_return;
    }
    if (check.outcome == EnvdEnvResult::Outcome::unavailable) {
      const std::string message = "The sandbox agent did not answer";
      co_await respond_text(ex, 502, message);
      co_return;
    }
    accepted_token_ = presented;
  }

  std::shared_ptr<Context> context;
  if (context_id) {
    context = contexts_.find(*context_id);
    if (!context) {
      const std::string message = "Context " + *context_id + " not found";
      co_await respond_text(ex, 404, message);
      co_return;
    }
  } else {
    std::string failure;
    try {
      context = co_await contexts_.default_for(normalize_language(language.value_or("")));
    } catch (const ContextError& e) {
      failure = e.what();
    }
    if (!context) {
      co_await respond_text(ex, 500, failure);
      co_return;
    }
  }

  // Headers go out at once; time queued behind another execution counts against the client's
  // execution timeout, as with E2B. No Content-Type, as the official server.
  co_await ex.begin_stream(200, "");
  GlobalEnvSource globals = [this, token]() -> net::awaitable<std::map<std::string, std::string>> {
    auto result = co_await fetch_global_env(executor_, options_.envd_port, token);
    co_return result.env;
  };
  ExchangeOutput output(ex);
  co_await run_cell(context, std::move(request), globals, output);
  co_await ex.stop_watching_peer();
  if (!ex.peer_gone()) co_await ex.finish_stream();
}

}  // namespace cove::interpreter
