// The control plane end to end over a real loopback socket, with an in-memory Lifecycle: status
// codes, JSON bodies and headers as the SDK sees them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "api/control_plane.hpp"

namespace cove::shim::api {
namespace {
using nlohmann::json;
using namespace std::chrono;

constexpr const char* kKey = "e2b_0123456789abcdef0123456789abcdef01234567";
constexpr const char* kOtherKey = "e2b_ffffffffffffffffffffffffffffffffffffffff";
constexpr const char* kToken = "sk_e2b_0123456789abcdef0123456789abcdef01234567";
constexpr const char* kOtherToken = "sk_e2b_ffffffffffffffffffffffffffffffffffffffff";

// In-memory lifecycle: sandboxes per team, newest first, pages of `limit` with the index as token.
class FakeLifecycle final : public Lifecycle {
 public:
  net::awaitable<SandboxView> create(std::string team, CreateRequest request) override {
    std::lock_guard lock(mu_);
    if (request.template_ref == "missing") throw LifecycleError(LifecycleErrc::not_found, "template not found");
    if (request.template_ref == "boom") throw std::runtime_error("/var/lib/cove/secret path leaked");
    last_create = request;
    SandboxView v;
    v.record.id = "sbx" + std::to_string(next_id_++);
    v.record.team_id = team;
    v.record.template_id = request.template_ref;
    v.record.state = SandboxState::running;
    v.record.started_at = TimePoint(seconds(1700000000 + next_id_));
    v.record.end_at = v.record.started_at + seconds(request.timeout_s.value_or(300));
    v.record.metadata = request.metadata;
    v.record.envd_version = "0.6.13";
    v.record.auto_pause = request.auto_pause;
    v.record.auto_resume = request.auto_resume;
    v.record.network_json = request.network_json;
    v.record.secure = request.secure;
    if (request.secure) v.envd_access_token = "envd-token-" + v.record.id;
    sandboxes_.insert(sandboxes_.begin(), v);
    co_return v;
  }
  net::awaitable<std::pair<SandboxView, bool>> connect(std::string team, std::string id,
                                                       std::optional<int64_t> timeout_s, bool memory) override {
    std::lock_guard lock(mu_);
    last_connect_timeout = timeout_s;
    last_connect_memory = memory;
    SandboxView& v = find(team, id);
    bool resumed = v.record.state == SandboxState::paused;
    v.record.state = SandboxState::running;
    co_return std::pair{v, resumed};
  }
  net::awaitable<void> pause(std::string team, std::string id, bool memory) override {
    std::lock_guard lock(mu_);
    SandboxView& v = find(team, id);
    if (v.record.state == SandboxState::paused) {
      throw LifecycleError(LifecycleErrc::conflict, "Sandbox \"" + id + "\" is already paused");
    }
    last_pause_memory = memory;
    v.record.state = SandboxState::paused;
    co_return;
  }
  net::awaitable<Snapshot> create_snapshot(std::string team, std::string id, std::string name) override {
    std::lock_guard lock(mu_);
    const SandboxView& source = find(team, id);
    Snapshot snap;
    snap.id = "snap" + std::to_string(next_id_++);
    snap.team_id = team;
    snap.sandbox_id = id;
    if (!name.empty()) snap.names = {name + ":default"};
    snap.template_id = source.record.template_id;
    snapshots_.push_back(snap);
    co_return snap;
  }
  net::awaitable<std::vector<Snapshot>> list_snapshots(std::string team, std::string sandbox_id,
                                                       std::string name) override {
    std::lock_guard lock(mu_);
    last_snapshot_filter = {sandbox_id, name};
    std::vector<Snapshot> out;
    for (const auto& snap : snapshots_) {
      if (snap.team_id != team) continue;
      if (!sandbox_id.empty() && snap.sandbox_id != sandbox_id) continue;
      if (!name.empty() && snap.id != name &&
          std::find(snap.names.begin(), snap.names.end(), name) == snap.names.end()) {
        continue;
      }
      out.push_back(snap);
    }
    co_return out;
  }
  net::awaitable<bool> delete_snapshot(std::string team, std::string id) override {
    std::lock_guard lock(mu_);
    for (auto it = snapshots_.begin(); it != snapshots_.end(); ++it) {
      if (it->id == id && it->team_id == team) {
        snapshots_.erase(it);
        co_return true;
      }
    }
    co_return false;
  }
  // Children are running copies of the source; the child at `fork_fail_index` fails instead.
  net::awaitable<std::vector<ForkOutcome>> fork(std::string team, std::string id, int count,
                                                std::optional<int64_t> timeout_s) override {
    std::lock_guard lock(mu_);
    last_fork = {count, timeout_s};
    const SandboxRecord source = find(team, id).record;
    std::vector<ForkOutcome> out;
    for (int i = 0; i < count; ++i) {
      ForkOutcome outcome;
      if (i == fork_fail_index) {
        outcome.error_code = 503;
        outcome.error_message = "No capacity for another sandbox";
      } else {
        SandboxView child;
        child.record = source;
        child.record.id = "sbx" + std::to_string(next_id_++);
        child.record.state = SandboxState::running;
        sandboxes_.insert(sandboxes_.begin(), child);
        outcome.sandbox = child;
      }
      out.push_back(std::move(outcome));
    }
    co_return out;
  }
  net::awaitable<SandboxView> get(std::string team, std::string id) override {
    std::lock_guard lock(mu_);
    co_return find(team, id);
  }
  net::awaitable<ListPage> list(std::string team, ListRequest request) override {
    std::lock_guard lock(mu_);
    last_list = request;
    ++list_calls;
    size_t start = request.next_token ? std::stoul(*request.next_token) : 0;
    std::vector<SandboxView> matching;
    for (const auto& v : sandboxes_) {
      if (v.record.team_id != team) continue;
      bool ok = true;
      for (const auto& [k, val] : request.metadata) {
        auto it = v.record.metadata.find(k);
        ok = ok && it != v.record.metadata.end() && it->second == val;
      }
      if (!request.states.empty()) {
        ok = ok && std::find(request.states.begin(), request.states.end(), v.record.state) != request.states.end();
      }
      if (ok) matching.push_back(v);
    }
    ListPage page;
    for (size_t i = start; i < matching.size() && page.items.size() < request.limit; ++i) {
      page.items.push_back(matching[i]);
    }
    if (start + page.items.size() < matching.size()) page.next_token = std::to_string(start + page.items.size());
    co_return page;
  }
  net::awaitable<bool> kill(std::string team, std::string id) override {
    std::lock_guard lock(mu_);
    for (auto it = sandboxes_.begin(); it != sandboxes_.end(); ++it) {
      if (it->record.id == id && it->record.team_id == team) {
        sandboxes_.erase(it);
        co_return true;
      }
    }
    co_return false;
  }
  net::awaitable<void> set_timeout(std::string team, std::string id, int64_t timeout_s) override {
    std::lock_guard lock(mu_);
    find(team, id);
    last_timeout = timeout_s;
    co_return;
  }
  net::awaitable<void> refresh(std::string team, std::string id, int64_t duration_s) override {
    std::lock_guard lock(mu_);
    find(team, id);
    last_refresh = duration_s;
    co_return;
  }
  net::awaitable<std::vector<MetricSample>> metrics(std::string team, std::string id, std::optional<TimePoint> start,
                                                    std::optional<TimePoint> end) override {
    std::lock_guard lock(mu_);
    find(team, id);
    last_window = {start, end};
    MetricSample s;
    s.timestamp = TimePoint(seconds(1700000000));
    s.cpu_count = 2;
    s.cpu_used_pct = 1.5;
    s.mem_used = 10;
    s.mem_total = 20;
    co_return std::vector<MetricSample>{s};
  }
  net::awaitable<std::map<std::string, MetricSample>> latest_metrics(std::string team,
                                                                     std::vector<std::string> ids) override {
    std::lock_guard lock(mu_);
    std::map<std::string, MetricSample> out;
    for (const auto& id : ids) {
      for (const auto& v : sandboxes_) {
        if (v.record.id == id && v.record.team_id == team) {
          MetricSample s;
          s.timestamp = TimePoint(seconds(1700000000));
          s.cpu_count = 2;
          out[id] = s;
        }
      }
    }
    co_return out;
  }
  std::vector<Template> templates() override {
    Template t;
    t.id = "base";
    t.aliases = {"base"};
    t.build_id = "b1";
    t.envd_version = "0.6.13";
    t.is_public = true;
    return {t};
  }
  std::optional<Template> template_by_alias(const std::string& alias) override {
    if (alias == "base" || alias == "team/base") return templates().front();
    return std::nullopt;
  }
  net::awaitable<std::unique_ptr<PortLease>> open_port(std::string, uint16_t) override { co_return nullptr; }
  std::optional<std::string> envd_token(const std::string&) override { return std::nullopt; }
  std::optional<std::string> traffic_token(const std::string&) override { return std::nullopt; }
  std::optional<std::string> team_for_api_key(const std::string& key) override {
    if (key == kKey) return "team_a";
    if (key == kOtherKey) return "team_b";
    return std::nullopt;
  }
  std::optional<Team> team_for_access_token(const std::string& token) override {
    ++token_lookups;
    if (token == kToken) return Team{"team_a", "acme", {}};
    if (token == kOtherToken) return Team{"team_b", "other", {}};
    return std::nullopt;
  }

  void mark_paused(const std::string& id) {
    std::lock_guard lock(mu_);
    for (auto& v : sandboxes_) {
      if (v.record.id == id) v.record.state = SandboxState::paused;
    }
  }

  std::mutex mu_;
  std::optional<CreateRequest> last_create;
  std::optional<int64_t> last_connect_timeout = -1;
  std::optional<bool> last_connect_memory, last_pause_memory;
  std::pair<std::string, std::string> last_snapshot_filter{"unset", "unset"};  // {sandbox_id, name}
  std::pair<int, std::optional<int64_t>> last_fork{-1, -1};                     // {count, timeout_s}
  int fork_fail_index = -1;
  std::optional<ListRequest> last_list;
  int list_calls = 0;
  std::atomic<int> token_lookups = 0;
  int64_t last_timeout = -1, last_refresh = -1;
  std::pair<std::optional<TimePoint>, std::optional<TimePoint>> last_window;

 private:
  SandboxView& find(const std::string& team, const std::string& id) {
    for (auto& v : sandboxes_) {
      if (v.record.id == id && v.record.team_id == team) return v;
    }
    throw LifecycleError(LifecycleErrc::not_found, sandbox_not_found_message(id));
  }
  std::vector<SandboxView> sandboxes_;  // newest first
  std::vector<Snapshot> snapshots_;     // oldest first
  int next_id_ = 1;
};

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lowercased names
  std::string body;
  json json_body() const { return json::parse(body, nullptr, false); }
};

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControlPlaneOptions options;
    options.domain = "cove.test";
    options.max_body_bytes = 4096;
    options.v1_default_timeout_s = 15;
    handler_ = make_control_plane(lifecycle_, options);
    acceptor_.open(net::ip::tcp::v4());
    acceptor_.bind({net::ip::address_v4::loopback(), 0});
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    net::co_spawn(io_, accept_loop(), net::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    io_.stop();
    thread_.join();
  }

  net::awaitable<void> accept_loop() {
    for (;;) {
      auto tcp = co_await acceptor_.async_accept(net::use_awaitable);
      const int family = AF_INET;
      http::Socket socket(io_, net::generic::stream_protocol(family, IPPROTO_TCP), tcp.release());
      std::string initial;
      net::co_spawn(io_, http::serve_connection(std::move(socket), std::move(initial), handler_), net::detached);
    }
  }

  // Sends raw bytes on a new connection and reads the whole response (the server closes: every
  // request sent here says `Connection: close`).
  Response exchange(const std::string& raw) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    for (size_t off = 0; off < raw.size();) {
      ssize_t n = ::write(fd, raw.data() + off, raw.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    std::string in;
    char buf[8192];
    auto deadline = steady_clock::now() + seconds(5);
    while (steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) break;
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    Response r;
    auto end = in.find("\r\n\r\n");
    if (in.size() < 12 || end == std::string::npos) return r;
    r.status = std::stoi(in.substr(9, 3));
    std::string head = in.substr(0, end);
    for (size_t pos = head.find("\r\n"); pos != std::string::npos;) {
      size_t next = head.find("\r\n", pos + 2);
      std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
      pos = next;
    }
    r.body = in.substr(end + 4);
    return r;
  }

  Response request(const std::string& method, const std::string& target, const std::string& body = "",
                   const char* key = kKey, bool chunked = false) {
    std::string raw = method + " " + target + " HTTP/1.1\r\nHost: api.cove.test\r\nConnection: close\r\n";
    if (key) raw += std::string("x-api-key: ") + key + "\r\n";
    if (chunked) {
      raw += "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
      // Two chunks, split mid-token, as undici does with larger bodies.
      size_t half = body.size() / 2;
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", half);
      raw += size + body.substr(0, half) + "\r\n";
      std::snprintf(size, sizeof size, "%zx\r\n", body.size() - half);
      raw += size + body.substr(half) + "\r\n0\r\n\r\n";
    } else {
      if (!body.empty() || method == "POST") {
        raw += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
      }
      raw += "\r\n" + body;
    }
    return exchange(raw);
  }

  // A request with exactly the given header lines ("Name: value\r\n" each) and no body.
  Response request_with(const std::string& method, const std::string& target, const std::string& headers) {
    return exchange(method + " " + target + " HTTP/1.1\r\nHost: api.cove.test\r\nConnection: close\r\n" + headers +
                    (method == "POST" ? "Content-Length: 0\r\n" : "") + "\r\n");
  }
  static std::string bearer(const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; }
  static std::string api_key(const std::string& key) { return "X-API-Key: " + key + "\r\n"; }

  // Every error is `{"code": status, "message": string}` as application/json.
  static void expect_error(const Response& r, int status) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "", "application/json");
    json j = r.json_body();
    ASSERT_TRUE(j.is_object()) << r.body;
    EXPECT_EQ(j.value("code", 0), status);
    EXPECT_TRUE(j.contains("message") && j["message"].is_string()) << r.body;
  }

  std::string create(const std::string& body = R"({"templateID":"base"})") {
    auto r = request("POST", "/v2/sandboxes", body);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json_body().value("sandboxID", "");
  }

  FakeLifecycle lifecycle_;
  http::Handler handler_;
  net::io_context io_;
  net::ip::tcp::acceptor acceptor_{io_};
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST_F(ControlPlaneTest, HealthNeedsNoKey) {
  auto r = request("GET", "/health", "", nullptr);
  EXPECT_EQ(r.status, 200);
}

TEST_F(ControlPlaneTest, MissingOrUnknownKeyIs401WithoutEchoingIt) {
  expect_error(request("GET", "/v2/sandboxes", "", nullptr), 401);
  auto r = request("GET", "/v2/sandboxes", "", "e2b_deadbeefdeadbeef");
  expect_error(r, 401);
  EXPECT_EQ(r.body.find("deadbeef"), std::string::npos);
  // Unimplemented endpoints are behind the key too.
  expect_error(request("PUT", "/sandboxes/abc/network", "{}", nullptr), 401);
  // The header name is case-insensitive.
  auto ok = exchange(std::string("GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-API-KEY: ") + kKey +
                     "\r\n\r\n");
  EXPECT_EQ(ok.status, 200);
}

TEST_F(ControlPlaneTest, CreateV2ChunkedAndGetInfo) {
  auto r = request("POST", "/v2/sandboxes",
                   R"({"templateID":"base","metadata":{"user":"alice"},"envVars":{"A":"1"},"timeout":120,)"
                   R"("autoPause":true,"autoResume":{"enabled":true},"network":{"allowOut":["1.1.1.1"]}})",
                   kKey, /*chunked=*/true);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  json j = r.json_body();
  const std::string id = j["sandboxID"];
  EXPECT_EQ(j["templateID"], "base");
  EXPECT_EQ(j["clientID"], "6532622b");
  EXPECT_EQ(j["envdVersion"], "0.6.13");
  EXPECT_EQ(j["envdAccessToken"], "envd-token-" + id);
  EXPECT_TRUE(j["trafficAccessToken"].is_null());
  EXPECT_EQ(j["domain"], "cove.test");
  {
    std::lock_guard lock(lifecycle_.mu_);
    ASSERT_TRUE(lifecycle_.last_create.has_value());
    EXPECT_EQ(lifecycle_.last_create->timeout_s, 120);
    EXPECT_EQ(lifecycle_.last_create->env_vars.at("A"), "1");
  }

  auto info = request("GET", "/sandboxes/" + id + "-6532622b");
  ASSERT_EQ(info.status, 200) << info.body;
  json d = info.json_body();
  EXPECT_EQ(d["sandboxID"], id);
  EXPECT_EQ(d["state"], "running");
  EXPECT_EQ(d["metadata"], json::parse(R"({"user":"alice"})"));
  EXPECT_EQ(d["lifecycle"], json::parse(R"({"onTimeout":"pause","autoResume":true})"));
  EXPECT_EQ(d["network"], json::parse(R"({"allowOut":["1.1.1.1"]})"));
  EXPECT_EQ(d["startedAt"], "2023-11-14T22:13:22.000Z");
  EXPECT_EQ(d["endAt"], "2023-11-14T22:15:22.000Z");
  EXPECT_EQ(d["volumeMounts"], json::array());
}

TEST_F(ControlPlaneTest, CreateV1DefaultsAndInsecure) {
  auto r = request("POST", "/sandboxes", R"({"templateID":"base","secure":false})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_FALSE(r.json_body().contains("envdAccessToken"));
  std::lock_guard lock(lifecycle_.mu_);
  EXPECT_EQ(lifecycle_.last_create->timeout_s, 15);
  EXPECT_FALSE(lifecycle_.last_create->secure);
}

TEST_F(ControlPlaneTest, CreateErrors) {
  auto r = request("POST", "/v2/sandboxes", R"({"templateID":"base","metadata":{"k":"hunter2"},"timeout":"x"})");
  expect_error(r, 400);
  EXPECT_EQ(r.body.find("hunter2"), std::string::npos);
  expect_error(request("POST", "/v2/sandboxes", "{not json"), 400);
  expect_error(request("POST", "/v2/sandboxes", "", kKey, true), 400);
  expect_error(request("POST", "/v2/sandboxes", R"({"templateID":"missing"})"), 404);
  auto boom = request("POST", "/v2/sandboxes", R"({"templateID":"boom"})");
  expect_error(boom, 500);
  EXPECT_EQ(boom.body.find("/var/lib"), std::string::npos);
  std::string big = R"({"templateID":"base","metadata":{"k":")" + std::string(5000, 'x') + R"("}})";
  expect_error(request("POST", "/v2/sandboxes", big), 413);
  expect_error(request("POST", "/v2/sandboxes", big, kKey, true), 413);
}

TEST_F(ControlPlaneTest, ConnectRunningAndPaused) {
  std::string id = create();
  auto r = request("POST", "/v2/sandboxes/" + id + "/connect", "");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json_body()["sandboxID"], id);
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_connect_timeout, std::nullopt);
  }
  lifecycle_.mark_paused(id);
  r = request("POST", "/sandboxes/" + id + "/connect", R"({"timeout":300})", kKey, true);
  EXPECT_EQ(r.status, 201) << r.body;
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_connect_timeout, 300);
  }
  expect_error(request("POST", "/sandboxes/" + id + "/connect", "{}"), 400);  // v1 needs timeout
  auto gone = request("POST", "/v2/sandboxes/nosuchsandbox/connect", R"({"timeout":30})");
  expect_error(gone, 404);
  EXPECT_EQ(gone.json_body()["message"], "Sandbox \"nosuchsandbox\" doesn't exist or you don't have access to it");
  // Another team's sandbox is invisible.
  expect_error(request("POST", "/v2/sandboxes/" + id + "/connect", "{}", kOtherKey), 404);
}

TEST_F(ControlPlaneTest, KillTimeoutRefresh) {
  std::string id = create();
  auto t = request("POST", "/sandboxes/" + id + "/timeout", R"({"timeout":60})", kKey, true);
  EXPECT_EQ(t.status, 204);
  EXPECT_TRUE(t.body.empty());
  expect_error(request("POST", "/sandboxes/" + id + "/timeout", R"({"timeout":-1})"), 400);
  auto f = request("POST", "/sandboxes/" + id + "/refreshes", R"({"duration":600})");
  EXPECT_EQ(f.status, 204);
  expect_error(request("POST", "/sandboxes/" + id + "/refreshes", R"({"duration":3601})"), 400);
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_timeout, 60);
    EXPECT_EQ(lifecycle_.last_refresh, 600);
  }
  expect_error(request("DELETE", "/sandboxes/" + id, "", kOtherKey), 404);
  auto k = request("DELETE", "/sandboxes/" + id);
  EXPECT_EQ(k.status, 204);
  EXPECT_TRUE(k.body.empty());
  expect_error(request("DELETE", "/sandboxes/" + id), 404);
  expect_error(request("POST", "/sandboxes/" + id + "/timeout", R"({"timeout":60})"), 404);
  expect_error(request("GET", "/sandboxes/Not_An_Id"), 400);
}

TEST_F(ControlPlaneTest, ListV2PagesWithNextTokenOnlyWhenMore) {
  std::string a = create(R"({"metadata":{"app":"x"}})");
  std::string b = create(R"({"metadata":{"app":"x"}})");
  std::string c = create(R"({"metadata":{"app":"y"}})");
  lifecycle_.mark_paused(a);

  auto all = request("GET", "/v2/sandboxes");
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(all.json_body().size(), 3u);
  EXPECT_EQ(all.headers.count("x-next-token"), 0u);

  auto p1 = request("GET", "/v2/sandboxes?state=running,paused&limit=2");
  ASSERT_EQ(p1.status, 200);
  ASSERT_EQ(p1.json_body().size(), 2u);
  EXPECT_EQ(p1.json_body()[0]["sandboxID"], c);  // newest first
  ASSERT_EQ(p1.headers.count("x-next-token"), 1u);
  auto p2 = request("GET", "/v2/sandboxes?state=running,paused&limit=2&nextToken=" + p1.headers["x-next-token"]);
  ASSERT_EQ(p2.json_body().size(), 1u);
  EXPECT_EQ(p2.json_body()[0]["sandboxID"], a);
  EXPECT_EQ(p2.json_body()[0]["state"], "paused");
  EXPECT_EQ(p2.headers.count("x-next-token"), 0u);

  // Metadata filter as the SDK encodes it, and a state filter.
  auto filtered = request("GET", "/v2/sandboxes?metadata=app%3Dx&state=running");
  ASSERT_EQ(filtered.json_body().size(), 1u);
  EXPECT_EQ(filtered.json_body()[0]["sandboxID"], b);
  expect_error(request("GET", "/v2/sandboxes?state=dead"), 400);
  expect_error(request("GET", "/v2/sandboxes?limit=0"), 400);
  expect_error(request("GET", "/v2/sandboxes?order=asc"), 501);
}

TEST_F(ControlPlaneTest, ListV1FollowsEveryPageRunningOnly) {
  for (int i = 0; i < 3; ++i) create();
  std::string paused = create();
  lifecycle_.mark_paused(paused);
  auto r = request("GET", "/sandboxes");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json_body().size(), 3u);
  EXPECT_EQ(r.headers.count("x-next-token"), 0u);
  std::lock_guard lock(lifecycle_.mu_);
  EXPECT_EQ(lifecycle_.last_list->states, std::vector<SandboxState>{SandboxState::running});
}

TEST_F(ControlPlaneTest, Metrics) {
  std::string id = create();
  auto r = request("GET", "/sandboxes/" + id + "/metrics?start=1700000000&end=1700000100");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json_body(), json::parse(R"([{"timestamp":"2023-11-14T22:13:20.000Z","timestampUnix":1700000000,
      "cpuCount":2,"cpuUsedPct":1.5,"memUsed":10,"memTotal":20,"memCache":0,"diskUsed":0,"diskTotal":0}])"));
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_window.first, TimePoint(seconds(1700000000)));
  }
  expect_error(request("GET", "/sandboxes/" + id + "/metrics?start=abc"), 400);
  expect_error(request("GET", "/sandboxes/nosuch/metrics"), 404);

  auto many = request("GET", "/sandboxes/metrics?sandbox_ids=" + id + ",nosuch");
  ASSERT_EQ(many.status, 200) << many.body;
  json j = many.json_body();
  ASSERT_TRUE(j["sandboxes"].is_object());
  EXPECT_EQ(j["sandboxes"].size(), 1u);
  EXPECT_EQ(j["sandboxes"][id]["cpuCount"], 2);
  expect_error(request("GET", "/sandboxes/metrics"), 400);
}

TEST_F(ControlPlaneTest, Templates) {
  auto r = request("GET", "/templates");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json_body()[0]["templateID"], "base");
  EXPECT_EQ(r.json_body()[0]["buildStatus"], "ready");
  auto a = request("GET", "/templates/aliases/base");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.json_body(), json::parse(R"({"templateID":"base","public":true})"));
  EXPECT_EQ(request("GET", "/templates/aliases/team%2Fbase").status, 200);
  expect_error(request("GET", "/templates/aliases/nope"), 404);
}

TEST_F(ControlPlaneTest, AccessTokenAuthenticatesTheTemplateOperations) {
  auto r = request_with("GET", "/templates", bearer(kToken));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json_body()[0]["templateID"], "base");
  // The scheme is case-insensitive; surrounding blanks are not part of the token.
  EXPECT_EQ(request_with("GET", "/templates", std::string("authorization: bearer  ") + kToken + " \r\n").status, 200);
  // Template operations the spec opens to access tokens get past authentication to what serves them.
  expect_error(request_with("GET", "/templates/t1/builds/b1/logs", bearer(kToken)), 501);
  expect_error(request_with("PATCH", "/templates/t1", bearer(kToken)), 501);
}

TEST_F(ControlPlaneTest, InvalidAccessTokenIs401WithoutEchoingIt) {
  const std::string wrong = "sk_e2b_deadbeefdeadbeefdeadbeefdeadbeefdeadbeef";
  auto r = request_with("GET", "/templates", bearer(wrong));
  expect_error(r, 401);
  EXPECT_EQ(r.json_body(), json::parse(R"({"code":401,"message":"Invalid access token"})"));
  EXPECT_EQ(r.body.find("deadbeef"), std::string::npos);
  expect_error(request_with("GET", "/templates", bearer("")), 401);
  expect_error(request_with("GET", "/templates", bearer("e2b_0123456789abcdef0123456789abcdef01234567")), 401);
  // Another scheme is no access token at all: the API key is what is missing then.
  auto basic = request_with("GET", "/templates", std::string("Authorization: Basic ") + kToken + "\r\n");
  expect_error(basic, 401);
  EXPECT_EQ(basic.json_body()["message"], "API key is missing");
}

TEST_F(ControlPlaneTest, AccessTokensDoNotReachSandboxes) {
  // The spec gives the sandbox operations ApiKeyAuth only.
  for (auto [method, target] : std::vector<std::pair<const char*, const char*>>{
           {"GET", "/v2/sandboxes"}, {"POST", "/sandboxes"}, {"GET", "/sandboxes/abc"},
           {"GET", "/templates/aliases/base"}, {"POST", "/sandboxes/abc/pause"}, {"POST", "/sandboxes/abc/resume"},
           {"POST", "/sandboxes/abc/fork"}, {"POST", "/sandboxes/abc/snapshots"}, {"GET", "/snapshots"}}) {
    auto r = request_with(method, target, bearer(kToken));
    expect_error(r, 401);
    EXPECT_EQ(r.json_body()["message"], "API key is missing") << method << " " << target;
  }
  EXPECT_EQ(lifecycle_.token_lookups, 0);
}

TEST_F(ControlPlaneTest, EitherValidCredentialAdmitsWhenBothAreSent) {
  const std::string bad_token = bearer("sk_e2b_0000000000000000000000000000000000000000");
  const std::string bad_key = api_key("e2b_0000000000000000000000000000000000000000");
  EXPECT_EQ(request_with("GET", "/templates", bearer(kToken) + bad_key).status, 200);
  EXPECT_EQ(request_with("GET", "/templates", bad_token + api_key(kKey)).status, 200);
  auto both_bad = request_with("GET", "/templates", bad_token + bad_key);
  expect_error(both_bad, 401);
  EXPECT_EQ(both_bad.json_body()["message"], "Invalid API key");
}

TEST_F(ControlPlaneTest, TemplatesOfAnotherTeamIdAre403) {
  EXPECT_EQ(request_with("GET", "/templates?teamID=team_a", bearer(kToken)).status, 200);
  EXPECT_EQ(request_with("GET", "/templates?teamID=", bearer(kToken)).status, 200);
  expect_error(request_with("GET", "/templates?teamID=team_b", bearer(kToken)), 403);
  expect_error(request_with("GET", "/templates?teamID=team_a", api_key(kOtherKey)), 403);
  EXPECT_EQ(request_with("GET", "/templates?teamID=team_b", bearer(kOtherToken)).status, 200);
}

TEST_F(ControlPlaneTest, TeamsListsTheAccessTokensTeamWithoutSecrets) {
  auto r = request_with("GET", "/teams", bearer(kToken));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(r.json_body(), json::parse(R"([{"teamID":"team_a","name":"acme","isDefault":true}])"));
  EXPECT_EQ(request_with("GET", "/teams", bearer(kOtherToken)).json_body()[0]["teamID"], "team_b");
  // Only an access token: the spec gives /teams no API-key scheme.
  auto with_key = request_with("GET", "/teams", api_key(kKey));
  expect_error(with_key, 401);
  EXPECT_EQ(with_key.json_body()["message"], "Access token is missing");
  auto wrong = request_with("GET", "/teams", bearer("sk_e2b_1111111111111111111111111111111111111111"));
  expect_error(wrong, 401);
  EXPECT_EQ(wrong.json_body()["message"], "Invalid access token");
  expect_error(request_with("POST", "/teams", bearer(kToken)), 405);
}

TEST_F(ControlPlaneTest, UnknownWrongMethodAndUnimplemented) {
  expect_error(request("GET", "/nope"), 404);
  expect_error(request("GET", "/nope", "", nullptr), 404);
  auto m = request("PUT", "/sandboxes/abc");
  expect_error(m, 405);
  EXPECT_EQ(m.headers["allow"], "GET, DELETE");
  expect_error(request("POST", "/v3/templates", R"({"name":"x"})", kKey, true), 501);
  expect_error(request("PUT", "/sandboxes/abc/network", "{}"), 501);
  expect_error(request("GET", "/sandboxes/abc/logs"), 501);
  expect_error(request("GET", "/v2/sandboxes/abc/logs"), 501);
  expect_error(request("GET", "/volumes"), 501);
}

TEST_F(ControlPlaneTest, PauseIs204ThenConflict) {
  std::string id = create();
  auto r = request("POST", "/sandboxes/" + id + "/pause", "");
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(request("GET", "/sandboxes/" + id).json_body()["state"], "paused");
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_pause_memory, true);  // an empty body keeps the memory
  }
  auto again = request("POST", "/sandboxes/" + id + "/pause", "{}", kKey, true);
  expect_error(again, 409);
  EXPECT_EQ(again.json_body()["message"], "Sandbox \"" + id + "\" is already paused");
}

TEST_F(ControlPlaneTest, PauseWithoutMemoryAndBadBodies) {
  std::string id = create();
  expect_error(request("POST", "/sandboxes/" + id + "/pause", R"({"memory":"no"})"), 400);
  expect_error(request("POST", "/sandboxes/" + id + "/pause", "[]"), 400);
  EXPECT_EQ(request("GET", "/sandboxes/" + id).json_body()["state"], "running");  // a refused pause did nothing
  EXPECT_EQ(request("POST", "/sandboxes/" + id + "/pause", R"({"memory":false})").status, 204);
  std::lock_guard lock(lifecycle_.mu_);
  EXPECT_EQ(lifecycle_.last_pause_memory, false);
}

TEST_F(ControlPlaneTest, PauseOfAnUnknownOrAnotherTeamsSandboxIs404) {
  auto unknown = request("POST", "/sandboxes/nosuchsandbox/pause", "");
  expect_error(unknown, 404);
  EXPECT_EQ(unknown.json_body()["message"], "Sandbox \"nosuchsandbox\" doesn't exist or you don't have access to it");
  std::string id = create();
  expect_error(request("POST", "/sandboxes/" + id + "/pause", "", kOtherKey), 404);
  EXPECT_EQ(request("GET", "/sandboxes/" + id).json_body()["state"], "running");
  expect_error(request("POST", "/sandboxes/Bad_Id/pause", ""), 400);
}

TEST_F(ControlPlaneTest, ConnectResumesAPausedSandboxWith201) {
  std::string id = create();
  ASSERT_EQ(request("POST", "/sandboxes/" + id + "/pause", "").status, 204);
  auto r = request("POST", "/v2/sandboxes/" + id + "/connect", R"({"timeout":60})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json_body()["sandboxID"], id);
  EXPECT_EQ(r.json_body()["envdAccessToken"], "envd-token-" + id);
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_connect_timeout, 60);
    EXPECT_EQ(lifecycle_.last_connect_memory, true);
  }
  // Running now: connect is 200.
  EXPECT_EQ(request("POST", "/v2/sandboxes/" + id + "/connect", "").status, 200);
}

TEST_F(ControlPlaneTest, ConnectPassesMemoryFalseThrough) {
  std::string id = create();
  ASSERT_EQ(request("POST", "/sandboxes/" + id + "/pause", "").status, 204);
  auto r = request("POST", "/v2/sandboxes/" + id + "/connect", R"({"memory":false})");
  EXPECT_EQ(r.status, 201) << r.body;
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_connect_memory, false);
    EXPECT_EQ(lifecycle_.last_connect_timeout, std::nullopt);
  }
  expect_error(request("POST", "/v2/sandboxes/" + id + "/connect", R"({"memory":0})"), 400);
}

TEST_F(ControlPlaneTest, ResumeOfARunningSandboxIs409AndOfAPausedOne201) {
  std::string id = create();
  auto running = request("POST", "/sandboxes/" + id + "/resume", R"({"timeout":30})");
  expect_error(running, 409);
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_connect_memory, std::nullopt);  // the lifecycle was not asked to resume
  }
  ASSERT_EQ(request("POST", "/sandboxes/" + id + "/pause", "").status, 204);
  auto r = request("POST", "/sandboxes/" + id + "/resume", R"({"timeout":30})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json_body()["sandboxID"], id);
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_connect_timeout, 30);
  }
  expect_error(request("POST", "/sandboxes/nosuchsandbox/resume", ""), 404);
  ASSERT_EQ(request("POST", "/sandboxes/" + id + "/pause", "").status, 204);
  expect_error(request("POST", "/sandboxes/" + id + "/resume", "", kOtherKey), 404);
}

TEST_F(ControlPlaneTest, SnapshotCreateIs201SnapshotInfo) {
  std::string id = create();
  auto named = request("POST", "/sandboxes/" + id + "/snapshots", R"({"name":"my-snap"})");
  ASSERT_EQ(named.status, 201) << named.body;
  EXPECT_EQ(named.headers["content-type"], "application/json");
  json j = named.json_body();
  ASSERT_TRUE(j.is_object()) << named.body;
  EXPECT_EQ(j.size(), 2u) << named.body;
  ASSERT_TRUE(j["snapshotID"].is_string());
  EXPECT_FALSE(j["snapshotID"].get<std::string>().empty());
  EXPECT_EQ(j["names"], json::array({"my-snap:default"}));

  auto unnamed = request("POST", "/sandboxes/" + id + "/snapshots", "");
  ASSERT_EQ(unnamed.status, 201) << unnamed.body;
  EXPECT_EQ(unnamed.json_body()["names"], json::array());
  EXPECT_NE(unnamed.json_body()["snapshotID"], j["snapshotID"]);

  expect_error(request("POST", "/sandboxes/" + id + "/snapshots", R"({"name":5})"), 400);
  expect_error(request("POST", "/sandboxes/nosuchsandbox/snapshots", ""), 404);
  expect_error(request("POST", "/sandboxes/" + id + "/snapshots", "", kOtherKey), 404);
}

TEST_F(ControlPlaneTest, SnapshotListFiltersPassThrough) {
  std::string a = create();
  std::string b = create();
  std::string s1 = request("POST", "/sandboxes/" + a + "/snapshots", R"({"name":"one"})").json_body()["snapshotID"];
  std::string s2 = request("POST", "/sandboxes/" + b + "/snapshots", "").json_body()["snapshotID"];
  std::string s3 = request("POST", "/sandboxes/" + a + "/snapshots", "").json_body()["snapshotID"];

  auto all = request("GET", "/snapshots");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.json_body(), json::parse(R"([{"snapshotID":")" + s1 + R"(","names":["one:default"]},)" +
                                         R"({"snapshotID":")" + s2 + R"(","names":[]},)" + R"({"snapshotID":")" +
                                         s3 + R"(","names":[]}])"));
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_snapshot_filter, (std::pair<std::string, std::string>{"", ""}));
  }

  auto of_a = request("GET", "/snapshots?sandboxID=" + a);
  ASSERT_EQ(of_a.status, 200) << of_a.body;
  ASSERT_EQ(of_a.json_body().size(), 2u);
  EXPECT_EQ(of_a.json_body()[0]["snapshotID"], s1);
  EXPECT_EQ(of_a.json_body()[1]["snapshotID"], s3);
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_snapshot_filter, (std::pair<std::string, std::string>{a, ""}));
  }

  auto named = request("GET", "/snapshots?name=one%3Adefault");
  ASSERT_EQ(named.json_body().size(), 1u) << named.body;
  EXPECT_EQ(named.json_body()[0]["snapshotID"], s1);
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_snapshot_filter.second, "one:default");
  }
  // Another team sees none of them.
  EXPECT_EQ(request("GET", "/snapshots", "", kOtherKey).json_body(), json::array());
}

TEST_F(ControlPlaneTest, DeletingASnapshotAsATemplateIs204Then404) {
  std::string id = create();
  std::string snap = request("POST", "/sandboxes/" + id + "/snapshots", "").json_body()["snapshotID"];
  // Another team's key does not reach it.
  expect_error(request("DELETE", "/templates/" + snap, "", kOtherKey), 404);
  ASSERT_EQ(request("GET", "/snapshots").json_body().size(), 1u);

  auto r = request("DELETE", "/templates/" + snap);
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(request("GET", "/snapshots").json_body(), json::array());
  // Gone now; and without template builds, an unknown template is 404 rather than 501.
  expect_error(request("DELETE", "/templates/" + snap), 404);
  expect_error(request("DELETE", "/templates/nosuchtemplate"), 404);
}

TEST_F(ControlPlaneTest, DeletingASnapshotWithAnAccessToken) {
  std::string id = create();
  std::string snap = request("POST", "/sandboxes/" + id + "/snapshots", "").json_body()["snapshotID"];
  expect_error(request_with("DELETE", "/templates/" + snap, bearer(kOtherToken)), 404);
  EXPECT_EQ(request_with("DELETE", "/templates/" + snap, bearer(kToken)).status, 204);
  EXPECT_EQ(request("GET", "/snapshots").json_body(), json::array());
}

TEST_F(ControlPlaneTest, ForkIs201WithOneEntryPerChild) {
  std::string id = create();
  {
    std::lock_guard lock(lifecycle_.mu_);
    lifecycle_.fork_fail_index = 1;
  }
  auto r = request("POST", "/sandboxes/" + id + "/fork", R"({"count":3,"timeout":120})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  json j = r.json_body();
  ASSERT_TRUE(j.is_array()) << r.body;
  ASSERT_EQ(j.size(), 3u) << r.body;
  for (size_t i : {0u, 2u}) {
    ASSERT_EQ(j[i].size(), 1u) << j[i];
    ASSERT_TRUE(j[i].contains("sandbox")) << j[i];
    const json& child = j[i]["sandbox"];
    ASSERT_TRUE(child["sandboxID"].is_string()) << child;
    EXPECT_NE(child["sandboxID"], id);
    EXPECT_EQ(child["templateID"], "base");
    EXPECT_EQ(child["clientID"], "6532622b");
    EXPECT_EQ(child["domain"], "cove.test");
    EXPECT_EQ(request("GET", "/sandboxes/" + child["sandboxID"].get<std::string>()).status, 200);
  }
  EXPECT_NE(j[0]["sandbox"]["sandboxID"], j[2]["sandbox"]["sandboxID"]);
  EXPECT_EQ(j[1], json::parse(R"({"error":{"code":503,"message":"No capacity for another sandbox"}})"));
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_fork.first, 3);
    EXPECT_EQ(lifecycle_.last_fork.second, 120);
  }
}

TEST_F(ControlPlaneTest, ForkDefaultsAndErrors) {
  std::string id = create();
  auto r = request("POST", "/sandboxes/" + id + "/fork", "");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json_body().size(), 1u);
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_fork.first, 1);
    EXPECT_EQ(lifecycle_.last_fork.second, std::nullopt);
  }
  expect_error(request("POST", "/sandboxes/" + id + "/fork", R"({"count":0})"), 400);
  expect_error(request("POST", "/sandboxes/" + id + "/fork", R"({"count":101})"), 400);
  expect_error(request("POST", "/sandboxes/" + id + "/fork", R"({"count":"2"})"), 400);
  expect_error(request("POST", "/sandboxes/nosuchsandbox/fork", ""), 404);
  expect_error(request("POST", "/sandboxes/" + id + "/fork", "", kOtherKey), 404);
  {
    std::lock_guard lock(lifecycle_.mu_);
    EXPECT_EQ(lifecycle_.last_fork.first, 1);  // refused bodies never reached the lifecycle
  }
}

TEST_F(ControlPlaneTest, PauseSnapshotAndForkRoutesNeedTheApiKey) {
  std::string id = create();
  std::string snap = request("POST", "/sandboxes/" + id + "/snapshots", "").json_body()["snapshotID"];
  for (auto [method, target] : std::vector<std::pair<std::string, std::string>>{
           {"POST", "/sandboxes/" + id + "/pause"}, {"POST", "/sandboxes/" + id + "/resume"},
           {"POST", "/sandboxes/" + id + "/fork"}, {"POST", "/sandboxes/" + id + "/snapshots"},
           {"GET", "/snapshots"}, {"GET", "/snapshots?sandboxID=" + id}, {"DELETE", "/templates/" + snap}}) {
    auto r = request(method, target, "", nullptr);
    expect_error(r, 401);
    EXPECT_EQ(r.json_body()["message"], "API key is missing") << method << " " << target;
    expect_error(request(method, target, "", "e2b_0000000000000000000000000000000000000000"), 401);
  }
  // Nothing happened: still running, the snapshot still there.
  EXPECT_EQ(request("GET", "/sandboxes/" + id).json_body()["state"], "running");
  EXPECT_EQ(request("GET", "/snapshots").json_body().size(), 1u);
}

TEST_F(ControlPlaneTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  std::string raw;
  for (int i = 0; i < 2; ++i) {
    raw += std::string("GET /templates HTTP/1.1\r\nHost: x\r\nx-api-key: ") + kKey + "\r\n\r\n";
  }
  raw += "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port_);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::write(fd, raw.data(), raw.size()), static_cast<ssize_t>(raw.size()));
  std::string in;
  char buf[8192];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) break;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t count = 0;
  for (size_t pos = in.find("HTTP/1.1 200"); pos != std::string::npos; pos = in.find("HTTP/1.1 200", pos + 1)) ++count;
  EXPECT_EQ(count, 3u);
}

}  // namespace
}  // namespace cove::shim::api
