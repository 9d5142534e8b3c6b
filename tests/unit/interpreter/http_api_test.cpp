// The :49999 HTTP surface over real sockets, with scripted kernels and a stand-in agent for
// /envs: status codes, exact bodies, headers, routing and the stream's shape.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <future>
#include <thread>

#include "http/server.hpp"
#include "interpreter/http_api.hpp"
#include "net/listeners.hpp"

namespace cove::interpreter {
namespace {

using Json = nlohmann::json;
namespace bhttp = boost::beast::http;
namespace fs = std::filesystem;

struct EchoKernel : Kernel {
  net::awaitable<void> start() override { co_return; }
  net::awaitable<void> execute(std::string code, bool silent, EventSink sink) override {
    if (silent) co_return;
    sink(ExecutionStarted{++count});
    sink(StreamOutput{false, "ran: " + code, "2026-11-30T06:53:49.077610+00:00"});
    sink(DisplayOutput{Json{{"text/plain", "'h\xc3\xa9'"}}, true});
    sink(ExecutionFinished{});
  }
  void interrupt() override {}
  net::awaitable<void> restart() override {
    ++restarts;
    co_return;
  }
  net::awaitable<void> shutdown() override { co_return; }
  int64_t count = 0;
  int restarts = 0;
};

struct Response {
  unsigned status = 0;
  std::string body;
  bhttp::fields headers;
  bool chunked = false;
};

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime = fs::temp_directory_path() / ("cove-http-api-" + std::to_string(::getpid()));
    fs::create_directories(runtime);
    contexts = std::make_unique<ContextRegistry>(
        io.get_executor(),
        [this](KernelLaunch launch) -> std::unique_ptr<Kernel> {
          if (launch.language == "cobol") throw KernelError("No kernel for cobol");
          return std::make_unique<EchoKernel>();
        },
        runtime.string(), std::vector<std::string>{});
    // The stand-in agent: /envs answers only to the right token.
    envd_acceptor.emplace(netio::listen_tcp(io.get_executor(), 0));
    envd_handler = [](http::Exchange& ex) -> net::awaitable<void> {
      if (ex.header("X-Access-Token") != "secret") {
        co_await ex.respond(401, "application/json", "{\"code\":401,\"message\":\"unauthorized\"}");
        co_return;
      }
      co_await ex.respond(200, "application/json", "{\"GLOBAL\":\"yes\"}");
    };
    serve(*envd_acceptor, envd_handler);
    api = std::make_unique<HttpApi>(io.get_executor(), *contexts,
                                    HttpApiOptions{netio::local_tcp_port(*envd_acceptor)});
    api_acceptor.emplace(netio::listen_tcp(io.get_executor(), 0));
    api_handler = [this](http::Exchange& ex) { return api->handle(ex); };
    serve(*api_acceptor, api_handler);
    port = netio::local_tcp_port(*api_acceptor);
    io_thread = std::thread([this] { io.run(); });
  }

  void TearDown() override {
    io.stop();
    io_thread.join();
    fs::remove_all(runtime);
  }

  void serve(netio::Acceptor& acceptor, http::Handler& handler) {
    std::function<void(netio::Socket)> on_connection = [this, &handler](netio::Socket s) {
      net::co_spawn(io, http::serve_connection(std::move(s), {}, handler), net::detached);
    };
    net::co_spawn(io, netio::accept_loop(acceptor, on_connection), net::detached);
  }

  Response request(bhttp::verb method, std::string target, std::string body = {},
                   std::vector<std::pair<std::string, std::string>> headers = {}) {
    net::io_context client;
    net::ip::tcp::socket socket(client);
    socket.connect({net::ip::make_address("127.0.0.1"), port});
    bhttp::request<bhttp::string_body> req(method, target, 11);
    req.set(bhttp::field::host, "localhost");
    for (auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    bhttp::write(socket, req);
    boost::beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(socket, buffer, res);
    Response out;
    out.status = res.result_int();
    out.body = res.body();
    out.headers = res.base();
    out.chunked = res.chunked();
    return out;
  }

  Response post_json(std::string target, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
    headers.emplace_back("Content-Type", "application/json");
    headers.emplace_back("X-Access-Token", "secret");
    return request(bhttp::verb::post, std::move(target), std::move(body), std::move(headers));
  }

  // The startup contexts, created as the server does before it listens.
  void create_defaults() {
    std::promise<void> done;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
          std::string python = "python";
          co_await contexts->default_for(python);
          done.set_value();
        },
        net::detached);
    done.get_future().wait();
  }

  net::io_context io;
  fs::path runtime;
  std::unique_ptr<ContextRegistry> contexts;
  std::unique_ptr<HttpApi> api;
  std::optional<netio::Acceptor> envd_acceptor, api_acceptor;
  http::Handler envd_handler, api_handler;
  uint16_t port = 0;
  std::thread io_thread;
};

std::vector<Json> lines_of(const std::string& body) {
  std::vector<Json> out;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    EXPECT_NE(end, std::string::npos) << "unterminated line";
    if (end == std::string::npos) break;
    EXPECT_GT(end, start) << "blank line";
    out.push_back(Json::parse(body.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

TEST_F(HttpApiTest, HealthIgnoresQueryStrings) {
  auto r = request(bhttp::verb::get, "/health?source=ci");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "\"OK\"");
  EXPECT_EQ(r.headers[bhttp::field::content_type], "application/json");
}

TEST_F(HttpApiTest, UnknownRouteAndWrongMethodAsFastApi) {
  auto missing = request(bhttp::verb::get, "/nope");
  EXPECT_EQ(missing.status, 404u);
  EXPECT_EQ(Json::parse(missing.body), (Json{{"detail", "Not Found"}}));
  auto wrong = request(bhttp::verb::get, "/execute");
  EXPECT_EQ(wrong.status, 405u);
  EXPECT_EQ(Json::parse(wrong.body), (Json{{"detail", "Method Not Allowed"}}));
}

TEST_F(HttpApiTest, CorsPreflightAndOrigin) {
  auto pre = request(bhttp::verb::options, "/execute", "",
                     {{"Origin", "https://x.test"}, {"Access-Control-Request-Method", "POST"},
                      {"Access-Control-Request-Headers", "content-type,x-access-token"}});
  EXPECT_EQ(pre.status, 200u);
  EXPECT_EQ(pre.headers["Access-Control-Allow-Origin"], "*");
  EXPECT_EQ(pre.headers["Access-Control-Allow-Methods"], "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
  EXPECT_EQ(pre.headers["Access-Control-Allow-Headers"], "content-type,x-access-token");
  EXPECT_EQ(pre.headers["Access-Control-Max-Age"], "600");
  auto get = request(bhttp::verb::get, "/health", "", {{"Origin", "https://x.test"}});
  EXPECT_EQ(get.headers["Access-Control-Allow-Origin"], "*");
}

TEST_F(HttpApiTest, ExecuteValidation) {
  auto both = post_json("/execute", R"({"code":"1","context_id":"a","language":"python"})");
  EXPECT_EQ(both.status, 400u);
  EXPECT_EQ(both.body, "Only one of context_id or language can be provided");
  EXPECT_EQ(both.headers[bhttp::field::content_type], "text/plain; charset=utf-8");
  auto bad_json = post_json("/execute", "{not json");
  EXPECT_EQ(bad_json.status, 422u);
  EXPECT_EQ(Json::parse(bad_json.body)["detail"][0]["type"], "json_invalid");
  auto missing = post_json("/execute", R"({"language":"python"})");
  EXPECT_EQ(missing.status, 422u);
  auto detail = Json::parse(missing.body)["detail"][0];
  EXPECT_EQ(detail["type"], "missing");
  EXPECT_EQ(detail["loc"], (Json{"body", "code"}));
  auto bad_env = post_json("/execute", R"({"code":"1","env_vars":{"A":1}})");
  EXPECT_EQ(bad_env.status, 422u);
  EXPECT_EQ(Json::parse(bad_env.body)["detail"][0]["loc"], (Json{"body", "env_vars", "A"}));
  auto unknown = post_json("/execute", R"({"code":"1","context_id":"nope"})");
  EXPECT_EQ(unknown.status, 404u);
  EXPECT_EQ(unknown.body, "Context nope not found");
  auto no_kernel = post_json("/execute", R"({"code":"1","language":"cobol"})");
  EXPECT_EQ(no_kernel.status, 500u);
  EXPECT_EQ(no_kernel.body, "Failed to create context: No kernel for cobol");
}

TEST_F(HttpApiTest, ExecuteNeedsTheAgentsToken) {
  auto r = request(bhttp::verb::post, "/execute", R"({"code":"1"})",
                   {{"Content-Type", "application/json"}, {"X-Access-Token", "wrong"}});
  EXPECT_EQ(r.status, 401u);
  EXPECT_EQ(Json::parse(r.body)["code"], 401);
  auto none = request(bhttp::verb::post, "/execute", R"({"code":"1"})", {{"Content-Type", "application/json"}});
  EXPECT_EQ(none.status, 401u);
}

TEST_F(HttpApiTest, ExecuteStreamsNdjsonWithoutContentType) {
  create_defaults();
  // Explicit nulls (the Python SDK) and absent fields (the JS SDK) both work.
  auto r = post_json("/execute?source=ci", R"({"code":"x","context_id":null,"language":null,"env_vars":null})");
  EXPECT_EQ(r.status, 200u);
  EXPECT_TRUE(r.chunked);
  EXPECT_EQ(r.headers.count(bhttp::field::content_type), 0u);
  for (unsigned char c : r.body) EXPECT_LT(c, 0x80);
  auto lines = lines_of(r.body);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["type"], "number_of_executions");
  EXPECT_EQ(lines[1]["type"], "stdout");
  // The sandbox-wide env var was prepended on the context's first run.
  EXPECT_EQ(lines[1]["text"], "ran: import os; os.environ['GLOBAL'] = 'yes'\nx");
  EXPECT_EQ(lines[2]["text"], "h\xc3\xa9");
  EXPECT_EQ(lines[3], (Json{{"type", "end_of_execution"}}));
  auto again = lines_of(post_json("/execute", R"({"code":"y","context_id":"default"})").body);
  ASSERT_EQ(again.size(), 4u);
  EXPECT_EQ(again[1]["text"], "ran: y");
}

TEST_F(HttpApiTest, ContextsLifecycle) {
  create_defaults();
  auto created = post_json("/contexts", R"({"language":"JS","cwd":"/tmp"})");
  ASSERT_EQ(created.status, 200u);
  auto ctx = Json::parse(created.body);
  EXPECT_EQ(ctx["language"], "javascript");
  EXPECT_EQ(ctx["cwd"], "/tmp");
  std::string id = ctx["id"];
  EXPECT_EQ(id.size(), 36u);
  auto empty_body = post_json("/contexts", "");
  ASSERT_EQ(empty_body.status, 200u);
  EXPECT_EQ(Json::parse(empty_body.body)["language"], "python");
  auto list = Json::parse(request(bhttp::verb::get, "/contexts").body);
  ASSERT_EQ(list.size(), 3u);  // creation order: the default, then ours
  EXPECT_EQ(list[1]["id"], id);
  EXPECT_EQ(list[2]["id"], Json::parse(empty_body.body)["id"]);
  auto bad_cwd = post_json("/contexts", R"({"cwd":"/definitely/not/here"})");
  EXPECT_EQ(bad_cwd.status, 500u);
  EXPECT_EQ(bad_cwd.body, "Failed to set working directory");
  // Restart and delete take an empty body with a JSON content type.
  auto restarted = request(bhttp::verb::post, "/contexts/" + id + "/restart", "", {{"Content-Type", "application/json"}});
  EXPECT_EQ(restarted.status, 200u);
  EXPECT_EQ(restarted.body, "null");
  EXPECT_EQ(request(bhttp::verb::post, "/contexts/nope/restart").body, "Context nope not found");
  EXPECT_TRUE(fs::is_directory(runtime / id));  // the context's private scratch dir
  auto removed = request(bhttp::verb::delete_, "/contexts/" + id, "", {{"Content-Type", "application/json"}});
  EXPECT_EQ(removed.status, 200u);
  EXPECT_FALSE(fs::exists(runtime / id));
  EXPECT_EQ(removed.body, "null");
  auto gone = request(bhttp::verb::delete_, "/contexts/" + id);
  EXPECT_EQ(gone.status, 404u);
  EXPECT_EQ(gone.body, "Context " + id + " not found");
  auto run_removed = post_json("/execute", R"({"code":"1","context_id":")" + id + R"("})");
  EXPECT_EQ(run_removed.status, 404u);
}

TEST_F(HttpApiTest, DeletedDefaultIsRecreatedOnNextUse) {
  create_defaults();
  auto list = Json::parse(request(bhttp::verb::get, "/contexts").body);
  ASSERT_EQ(list.size(), 1u);
  std::string id = list[0]["id"];
  ASSERT_EQ(request(bhttp::verb::delete_, "/contexts/" + id).status, 200u);
  auto r = post_json("/execute", R"({"code":"z"})");
  EXPECT_EQ(r.status, 200u);
  auto after = Json::parse(request(bhttp::verb::get, "/contexts").body);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0]["id"], id);
}

}  // namespace
}  // namespace cove::interpreter
