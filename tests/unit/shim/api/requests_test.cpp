#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/errors.hpp"
#include "api/requests.hpp"

namespace cove::shim::api {
namespace {

// The status of the ApiError `fn` throws (0 if it throws none), and its message.
template <typename Fn>
std::pair<int, std::string> failure(Fn fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    return {e.status, e.what()};
  }
  return {0, ""};
}

TEST(CreateRequest, SdkV2Body) {
  auto r = parse_create_request(
      R"({"templateID":"code-interpreter-v1","metadata":{"user":"alice"},"envVars":{"A":"1"},"timeout":120})",
      ApiVersion::v2, std::nullopt);
  EXPECT_EQ(r.template_ref, "code-interpreter-v1");
  EXPECT_EQ(r.timeout_s, 120);
  EXPECT_EQ(r.metadata, (std::map<std::string, std::string>{{"user", "alice"}}));
  EXPECT_EQ(r.env_vars, (std::map<std::string, std::string>{{"A", "1"}}));
  EXPECT_TRUE(r.secure);
  EXPECT_TRUE(r.allow_internet_access);
  EXPECT_FALSE(r.auto_pause);
  EXPECT_TRUE(r.auto_pause_memory);
  EXPECT_FALSE(r.auto_resume);
  EXPECT_EQ(r.network_json, "null");
}

TEST(CreateRequest, AutoPauseMemory) {
  auto r = parse_create_request(R"({"autoPause":true,"autoPauseMemory":false})", ApiVersion::v2, std::nullopt);
  EXPECT_TRUE(r.auto_pause);
  EXPECT_FALSE(r.auto_pause_memory);
  EXPECT_TRUE(parse_create_request(R"({"autoPauseMemory":true})", ApiVersion::v2, std::nullopt).auto_pause_memory);
  EXPECT_TRUE(parse_create_request(R"({"autoPauseMemory":null})", ApiVersion::v2, std::nullopt).auto_pause_memory);
  auto [status, message] =
      failure([] { parse_create_request(R"({"autoPauseMemory":"no"})", ApiVersion::v2, std::nullopt); });
  EXPECT_EQ(status, 400);
  EXPECT_NE(message.find("'autoPauseMemory'"), std::string::npos) << message;
}

TEST(CreateRequest, SdkV1BodyAndDefaults) {
  auto r = parse_create_request(R"({"templateID":"base","timeout":300,"secure":false,"allow_internet_access":false})",
                                ApiVersion::v1, 15);
  EXPECT_EQ(r.timeout_s, 300);
  EXPECT_FALSE(r.secure);
  EXPECT_FALSE(r.allow_internet_access);

  auto d = parse_create_request("{}", ApiVersion::v1, 15);
  EXPECT_EQ(d.template_ref, "base");
  EXPECT_EQ(d.timeout_s, 15);
  EXPECT_TRUE(d.secure);
  EXPECT_EQ(parse_create_request("{}", ApiVersion::v2, std::nullopt).timeout_s, std::nullopt);
  // v2 has no `secure`: always secured.
  EXPECT_TRUE(parse_create_request(R"({"secure":false})", ApiVersion::v2, std::nullopt).secure);
  // Go reads `null` as absent.
  EXPECT_EQ(parse_create_request(R"({"timeout":null,"metadata":null})", ApiVersion::v2, 7).timeout_s, 7);
}

TEST(CreateRequest, LifecycleNetworkAndIgnoredFields) {
  auto r = parse_create_request(
      R"({"templateID":"base","autoPause":true,"autoResume":{"enabled":true},
          "network":{"allowOut":["1.1.1.1"],"denyOut":["0.0.0.0/0"],"allowPublicTraffic":false},
          "mcp":{"x":{}},"iam":{"tokens":{}},"volumeMounts":[],"unknownField":5})",
      ApiVersion::v2, std::nullopt);
  EXPECT_TRUE(r.auto_pause);
  EXPECT_TRUE(r.auto_resume);
  EXPECT_EQ(nlohmann::json::parse(r.network_json),
            nlohmann::json::parse(R"({"allowOut":["1.1.1.1"],"denyOut":["0.0.0.0/0"],"allowPublicTraffic":false})"));
}

TEST(CreateRequest, RejectsBadBodiesWithoutEchoingThem) {
  const std::string secret = "s3cr3t-value";
  for (const std::string& body : std::vector<std::string>{
           std::string(""), std::string("not json " + secret), std::string("[1,2]"),
           std::string(R"({"templateID":5})"), std::string(R"({"templateID":""})"),
           std::string(R"({"timeout":"60"})"), std::string(R"({"timeout":1.5})"),
           std::string(R"({"timeout":-1})"), std::string(R"({"timeout":0})"),
           std::string(R"({"timeout":2147483648})"), std::string(R"({"timeout":99999999999999999999})"),
           std::string(R"({"metadata":["a"]})"), std::string(R"({"metadata":{"k":1}})"),
           std::string(R"({"envVars":{"k":")" + secret + R"(","n":null}})"),
           std::string(R"({"secure":"yes"})"), std::string(R"({"allow_internet_access":1})"),
           std::string(R"({"autoPause":"true"})"), std::string(R"({"autoResume":true})"),
           std::string(R"({"autoResume":{"enabled":"yes"}})"),
           std::string(R"({"autoResume":{"enabled":true},"autoPauseMemory":false})"),
           std::string(R"({"network":[]})"), std::string(R"({"network":{"allowOut":"1.1.1.1"}})"),
           std::string(R"({"network":{"egressProxy":{"username":"u"}}})"),
           std::string(R"({"volumeMounts":{}})"), std::string(R"({"mcp":"x"})"),
           std::string(R"({"templateID":"base")"),  // truncated
       }) {
    auto [status, message] = failure([&] { parse_create_request(body, ApiVersion::v1, std::nullopt); });
    EXPECT_EQ(status, 400) << body;
    EXPECT_EQ(message.find(secret), std::string::npos) << message;
  }
}

TEST(CreateRequest, RejectsDeepNesting) {
  std::string deep = R"({"metadata":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(failure([&] { parse_create_request(deep, ApiVersion::v2, std::nullopt); }).first, 400);
  // Brackets inside strings are data, not nesting.
  std::string quoted = R"({"metadata":{"k":")" + std::string(1000, '[') + R"("}})";
  EXPECT_EQ(parse_create_request(quoted, ApiVersion::v2, std::nullopt).metadata.at("k").size(), 1000u);
}

TEST(ConnectRequest, V1RequiresTimeoutV2DoesNot) {
  EXPECT_EQ(parse_connect_request(R"({"timeout":300})", ApiVersion::v1).timeout_s, 300);
  EXPECT_EQ(failure([] { parse_connect_request("{}", ApiVersion::v1); }).first, 400);
  EXPECT_EQ(failure([] { parse_connect_request("", ApiVersion::v1); }).first, 400);
  EXPECT_EQ(parse_connect_request("", ApiVersion::v2).timeout_s, std::nullopt);
  EXPECT_EQ(parse_connect_request("{}", ApiVersion::v2).timeout_s, std::nullopt);
  EXPECT_EQ(parse_connect_request(R"({"timeout":0})", ApiVersion::v2).timeout_s, 0);
  EXPECT_EQ(parse_connect_request(R"({"timeout":30,"memory":true})", ApiVersion::v2).timeout_s, 30);
  EXPECT_EQ(failure([] { parse_connect_request(R"({"timeout":-5})", ApiVersion::v2); }).first, 400);
}

TEST(ConnectRequest, MemoryDefaultsToTrueAndFalseIsKept) {
  EXPECT_TRUE(parse_connect_request("", ApiVersion::v2).memory);
  EXPECT_TRUE(parse_connect_request(R"({"memory":null})", ApiVersion::v2).memory);
  EXPECT_TRUE(parse_connect_request(R"({"timeout":30})", ApiVersion::v1).memory);
  auto r = parse_connect_request(R"({"memory":false})", ApiVersion::v2);
  EXPECT_FALSE(r.memory);
  EXPECT_EQ(r.timeout_s, std::nullopt);
  auto v1 = parse_connect_request(R"({"timeout":60,"memory":false})", ApiVersion::v1);
  EXPECT_FALSE(v1.memory);
  EXPECT_EQ(v1.timeout_s, 60);
  auto [status, message] = failure([] { parse_connect_request(R"({"memory":"false"})", ApiVersion::v2); });
  EXPECT_EQ(status, 400);
  EXPECT_NE(message.find("'memory'"), std::string::npos) << message;
}

TEST(PauseRequest, MemoryIsOptional) {
  EXPECT_TRUE(parse_pause_request(""));
  EXPECT_TRUE(parse_pause_request(" \r\n"));
  EXPECT_TRUE(parse_pause_request("{}"));
  EXPECT_TRUE(parse_pause_request(R"({"memory":null})"));
  EXPECT_TRUE(parse_pause_request(R"({"memory":true})"));
  EXPECT_FALSE(parse_pause_request(R"({"memory":false})"));
  for (const char* body : {R"({"memory":0})", R"({"memory":"no"})", R"({"memory":[]})"}) {
    auto [status, message] = failure([&] { parse_pause_request(body); });
    EXPECT_EQ(status, 400) << body;
    EXPECT_NE(message.find("'memory'"), std::string::npos) << message;
  }
  for (const char* body : {"[]", "true", "{", "not json"}) {
    EXPECT_EQ(failure([&] { parse_pause_request(body); }).first, 400) << body;
  }
}

TEST(SnapshotRequest, NameIsOptional) {
  EXPECT_EQ(parse_snapshot_request(""), "");
  EXPECT_EQ(parse_snapshot_request("{}"), "");
  EXPECT_EQ(parse_snapshot_request(R"({"name":null})"), "");
  EXPECT_EQ(parse_snapshot_request(R"({"name":"my-snap"})"), "my-snap");
  for (const char* body : {R"({"name":5})", R"({"name":["a"]})", R"({"name":{}})", R"({"name":true})"}) {
    auto [status, message] = failure([&] { parse_snapshot_request(body); });
    EXPECT_EQ(status, 400) << body;
    EXPECT_NE(message.find("'name'"), std::string::npos) << message;
  }
  EXPECT_EQ(failure([] { parse_snapshot_request("[]"); }).first, 400);
}

TEST(ForkRequest, DefaultsAndBounds) {
  for (const char* body : {"", "{}", R"({"count":null,"timeout":null})"}) {
    auto r = parse_fork_request(body);
    EXPECT_EQ(r.count, 1) << body;
    EXPECT_EQ(r.timeout_s, std::nullopt) << body;
  }
  auto r = parse_fork_request(R"({"count":100,"timeout":120})");
  EXPECT_EQ(r.count, 100);
  EXPECT_EQ(r.timeout_s, 120);
  EXPECT_EQ(parse_fork_request(R"({"count":1})").count, 1);
  // A zero timeout means the default, as in create.
  EXPECT_EQ(parse_fork_request(R"({"timeout":0})").timeout_s, std::nullopt);
  for (const char* body : {R"({"count":0})", R"({"count":101})", R"({"count":-1})", R"({"count":4294967296})"}) {
    auto [status, message] = failure([&] { parse_fork_request(body); });
    EXPECT_EQ(status, 400) << body;
    EXPECT_NE(message.find("count"), std::string::npos) << message;
  }
  for (auto [body, field] : std::vector<std::pair<const char*, const char*>>{
           {R"({"count":"2"})", "'count'"}, {R"({"count":1.5})", "'count'"},
           {R"({"timeout":"60"})", "'timeout'"}, {R"({"timeout":-1})", "'timeout'"}}) {
    auto [status, message] = failure([&] { parse_fork_request(body); });
    EXPECT_EQ(status, 400) << body;
    EXPECT_NE(message.find(field), std::string::npos) << body << ": " << message;
  }
  EXPECT_EQ(failure([] { parse_fork_request("[1]"); }).first, 400);
}

TEST(TimeoutAndRefreshRequests, Bounds) {
  EXPECT_EQ(parse_timeout_request(R"({"timeout":60})"), 60);
  EXPECT_EQ(parse_timeout_request(R"({"timeout":0})"), 0);
  EXPECT_EQ(failure([] { parse_timeout_request("{}"); }).first, 400);
  EXPECT_EQ(failure([] { parse_timeout_request(R"({"timeout":-1})"); }).first, 400);
  EXPECT_EQ(failure([] { parse_timeout_request(""); }).first, 400);

  EXPECT_EQ(parse_refresh_request(""), kMinRefreshSeconds);
  EXPECT_EQ(parse_refresh_request(R"({"duration":5})"), kMinRefreshSeconds);
  EXPECT_EQ(parse_refresh_request(R"({"duration":600})"), 600);
  EXPECT_EQ(parse_refresh_request(R"({"duration":3600})"), 3600);
  EXPECT_EQ(failure([] { parse_refresh_request(R"({"duration":3601})"); }).first, 400);
  EXPECT_EQ(failure([] { parse_refresh_request(R"({"duration":-1})"); }).first, 400);
}

TEST(SandboxId, StripsTheClientSuffixAndValidates) {
  EXPECT_EQ(parse_sandbox_id("i1a2b3c4d5e6f7g8h9j0"), "i1a2b3c4d5e6f7g8h9j0");
  EXPECT_EQ(parse_sandbox_id("i1a2b3c4d5e6f7g8h9j0-6532622b"), "i1a2b3c4d5e6f7g8h9j0");
  for (const char* bad : {"", "-abc", "ABC", "a_b", "a%20b", "a.b", "ünï"}) {
    EXPECT_EQ(failure([&] { parse_sandbox_id(bad); }), (std::pair<int, std::string>{400, "Invalid sandbox ID"}))
        << bad;
  }
}

TEST(ListQuery, V2Parameters) {
  auto r = parse_list_query(QueryString("state=running,paused&limit=5&nextToken=tok%3D&metadata=user%3Dalice"),
                            ApiVersion::v2);
  EXPECT_EQ(r.states, (std::vector<SandboxState>{SandboxState::running, SandboxState::paused}));
  EXPECT_EQ(r.limit, 5u);
  EXPECT_EQ(r.next_token, "tok=");
  EXPECT_EQ(r.metadata, (std::map<std::string, std::string>{{"user", "alice"}}));

  auto d = parse_list_query(QueryString(""), ApiVersion::v2);
  EXPECT_TRUE(d.states.empty());
  EXPECT_EQ(d.limit, 100u);
  EXPECT_EQ(d.next_token, std::nullopt);
  // Exploded form works too, and `order=desc` is the default.
  auto e = parse_list_query(QueryString("state=paused&state=running&order=desc"), ApiVersion::v2);
  EXPECT_EQ(e.states, (std::vector<SandboxState>{SandboxState::paused, SandboxState::running}));
}

TEST(ListQuery, V2Rejections) {
  for (const char* q : {"state=killed", "state=Running", "limit=0", "limit=101", "limit=abc", "limit=-1",
                        "limit=5x", "metadata=a%3", "order=sideways", "state=%zz"}) {
    EXPECT_EQ(failure([&] { parse_list_query(QueryString(q), ApiVersion::v2); }).first, 400) << q;
  }
  for (const char* q : {"order=asc", "startedAfter=2024-01-01T00:00:00Z", "template=base"}) {
    EXPECT_EQ(failure([&] { parse_list_query(QueryString(q), ApiVersion::v2); }).first, 501) << q;
  }
}

TEST(ListQuery, V1IsRunningOnly) {
  auto r = parse_list_query(QueryString("metadata=app%3Dprod"), ApiVersion::v1);
  EXPECT_EQ(r.states, std::vector<SandboxState>{SandboxState::running});
  EXPECT_EQ(r.metadata.at("app"), "prod");
}

TEST(MetricsQuery, WindowAndIds) {
  auto w = parse_metrics_window(QueryString("start=1700000000&end=1700000060"));
  EXPECT_EQ(w.start, TimePoint(std::chrono::seconds(1700000000)));
  EXPECT_EQ(w.end, TimePoint(std::chrono::seconds(1700000060)));
  EXPECT_FALSE(parse_metrics_window(QueryString("")).start.has_value());
  for (const char* q : {"start=-1", "start=1.5", "end=x", "start=20&end=10", "start=99999999999999"}) {
    EXPECT_EQ(failure([&] { parse_metrics_window(QueryString(q)); }).first, 400) << q;
  }

  EXPECT_EQ(parse_sandbox_ids(QueryString("sandbox_ids=a1,b2-6532622b,a1")), (std::vector<std::string>{"a1", "b2"}));
  EXPECT_EQ(parse_sandbox_ids(QueryString("sandbox_ids=a1%2Cb2")), (std::vector<std::string>{"a1", "b2"}));
  EXPECT_EQ(failure([] { parse_sandbox_ids(QueryString("")); }).first, 400);
  EXPECT_EQ(failure([] { parse_sandbox_ids(QueryString("sandbox_ids=")); }).first, 400);
  EXPECT_EQ(failure([] { parse_sandbox_ids(QueryString("sandbox_ids=A")); }).first, 400);
  std::string many = "sandbox_ids=";
  for (int i = 0; i < 101; ++i) many += (i ? "," : "") + std::string("s") + std::to_string(i);
  EXPECT_EQ(failure([&] { parse_sandbox_ids(QueryString(many)); }).first, 400);
}

}  // namespace
}  // namespace cove::shim::api
