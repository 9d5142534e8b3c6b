// POST /init: body parsing (rest::parse_init_body) and its effect on AgentState (envd.md §3).
#include <gtest/gtest.h>

#include "rest/endpoints.hpp"
#include "system/agent_state.hpp"
#include "system/rfc3339.hpp"

using namespace std::chrono;
using cove::rest::parse_init_body;
using cove::system::AgentState;
using cove::system::InitOutcome;
using cove::system::InitRequest;

namespace {
std::optional<InitRequest> parse(std::string_view body) {
  InitRequest req;
  if (!parse_init_body(body, req)) return std::nullopt;
  return req;
}
system_clock::time_point at(int64_t unix_seconds) { return system_clock::time_point(seconds(unix_seconds)); }
}  // namespace

// ---- parse_init_body -------------------------------------------------------------------------

TEST(InitBody, EmptyBodyIsAllowed) {
  for (const char* body : {"", " ", "\r\n\t "}) {
    auto req = parse(body);
    ASSERT_TRUE(req.has_value()) << '"' << body << '"';
    EXPECT_FALSE(req->env_vars || req->access_token || req->timestamp || req->default_user ||
                 req->default_workdir);
  }
  auto empty_object = parse("{}");
  ASSERT_TRUE(empty_object.has_value());
  EXPECT_FALSE(empty_object->access_token.has_value());
}

TEST(InitBody, AllFields) {
  auto req = parse(R"({"envVars":{"A":"1","B":""},"accessToken":"0123abcd","timestamp":"2026-01-01T00:00:00.5Z",
                       "defaultUser":"user","defaultWorkdir":"/home/user/work","hyperloopIP":"10.0.0.1",
                       "lifecycleID":"x","unknownField":[1,2,3]})");
  ASSERT_TRUE(req.has_value());
  ASSERT_TRUE(req->env_vars.has_value());
  EXPECT_EQ(*req->env_vars, (std::map<std::string, std::string>{{"A", "1"}, {"B", ""}}));
  EXPECT_EQ(req->access_token, "0123abcd");
  ASSERT_TRUE(req->timestamp.has_value());
  EXPECT_EQ(*req->timestamp, at(1767225600) + milliseconds(500));
  EXPECT_EQ(req->default_user, "user");
  EXPECT_EQ(req->default_workdir, "/home/user/work");
}

TEST(InitBody, NullFieldsAreAbsent) {
  auto req = parse(R"({"envVars":null,"accessToken":null,"timestamp":null,"defaultUser":null,"defaultWorkdir":null})");
  ASSERT_TRUE(req.has_value());
  EXPECT_FALSE(req->env_vars || req->access_token || req->timestamp || req->default_user || req->default_workdir);
}

TEST(InitBody, InvalidJsonIsRejected) {
  for (const char* body : {"{", "{\"envVars\":", "not json", "{\"a\":1}}", "[]", "\"string\"", "42"}) {
    EXPECT_FALSE(parse(body).has_value()) << body;
  }
}

TEST(InitBody, EmptyAccessTokenIsRejected) {
  EXPECT_FALSE(parse(R"({"accessToken":""})").has_value());
}

TEST(InitBody, TokenWithBackslashIsRejected) {
  EXPECT_FALSE(parse(R"({"accessToken":"abc\\def"})").has_value());
  EXPECT_FALSE(parse(R"({"accessToken":"\\"})").has_value());
}

// envd rejects any JSON escape sequence inside the token *as written in the body* (secure_token.go
// UnmarshalJSON checks the raw bytes between the quotes for '\'; envd.md §1 "no JSON escapes
// allowed", §3 "a token containing `\`, gives 400"). Checking only the decoded value misses them.
TEST(InitBody, TokenWithJsonEscapeSequenceIsRejected) {
  EXPECT_FALSE(parse(R"({"accessToken":"abc\u0064"})").has_value()) << "\\u escape accepted";
  EXPECT_FALSE(parse(R"({"accessToken":"ab\/cd"})").has_value()) << "\\/ escape accepted";
  EXPECT_FALSE(parse(R"({"accessToken":"ab\ncd"})").has_value()) << "\\n escape accepted";
  EXPECT_FALSE(parse(R"({"accessToken":"ab\"cd"})").has_value()) << "\\\" escape accepted";
  // Other fields may use escapes freely.
  auto ok = parse(R"({"accessToken":"plain","envVars":{"K":"line\nbreak \u00e9"}})");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->env_vars->at("K"), "line\nbreak \xc3\xa9");
}

TEST(InitBody, WrongTypesAreRejected) {
  for (const char* body : {
           R"({"envVars":"A=1"})",
           R"({"envVars":["A"]})",
           R"({"envVars":{"A":1}})",
           R"({"accessToken":123})",
           R"({"accessToken":{"v":"x"}})",
           R"({"timestamp":1767225600})",
           R"({"defaultUser":5})",
           R"({"defaultUser":["user"]})",
           R"({"defaultWorkdir":true})",
       }) {
    EXPECT_FALSE(parse(body).has_value()) << body;
  }
}

TEST(InitBody, InvalidTimestampIsRejected) {
  EXPECT_FALSE(parse(R"({"timestamp":"yesterday"})").has_value());
  EXPECT_FALSE(parse(R"({"timestamp":"2026-01-01T00:00:00"})").has_value());
  auto ok = parse(R"({"timestamp":"2026-01-01T01:00:00+01:00"})");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok->timestamp, at(1767225600));
}

// ---- AgentState::apply_init ------------------------------------------------------------------

TEST(AgentState, Defaults) {
  AgentState s;
  EXPECT_FALSE(s.has_token());
  EXPECT_FALSE(s.token_matches(""));
  EXPECT_FALSE(s.token_matches("anything"));
  EXPECT_EQ(s.default_user(), "root");
  EXPECT_FALSE(s.default_workdir().has_value());
  auto env = s.global_env();
  EXPECT_EQ(env.at("E2B_SANDBOX"), "true");
}

TEST(AgentState, FirstInitSetsToken) {
  AgentState s;
  InitRequest req;
  req.access_token = "secret-1";
  EXPECT_EQ(s.apply_init(req), InitOutcome::applied);
  EXPECT_TRUE(s.has_token());
  EXPECT_TRUE(s.token_matches("secret-1"));
  EXPECT_FALSE(s.token_matches("secret-2"));
  EXPECT_FALSE(s.token_matches("secret-"));
  EXPECT_FALSE(s.token_matches("secret-11"));
  EXPECT_FALSE(s.token_matches(""));
}

TEST(AgentState, FirstInitWithoutTokenLeavesSandboxOpen) {
  AgentState s;
  InitRequest req;
  req.env_vars = std::map<std::string, std::string>{{"A", "1"}};
  EXPECT_EQ(s.apply_init(req), InitOutcome::applied);
  EXPECT_FALSE(s.has_token());
  // ...and a later init may still set one.
  InitRequest later;
  later.access_token = "t";
  EXPECT_EQ(s.apply_init(later), InitOutcome::applied);
  EXPECT_TRUE(s.token_matches("t"));
}

TEST(AgentState, ReinitNeedsTheSameToken) {
  AgentState s;
  InitRequest first;
  first.access_token = "secret-1";
  first.default_user = "user";
  ASSERT_EQ(s.apply_init(first), InitOutcome::applied);

  InitRequest no_token;
  no_token.default_user = "hacker";
  no_token.env_vars = std::map<std::string, std::string>{{"EVIL", "1"}};
  EXPECT_EQ(s.apply_init(no_token), InitOutcome::unauthorized_reset);

  InitRequest wrong;
  wrong.access_token = "secret-2";
  wrong.default_user = "hacker";
  wrong.env_vars = std::map<std::string, std::string>{{"EVIL", "1"}};
  EXPECT_EQ(s.apply_init(wrong), InitOutcome::token_mismatch);

  // Neither rejected request changed anything.
  EXPECT_TRUE(s.token_matches("secret-1"));
  EXPECT_FALSE(s.token_matches("secret-2"));
  EXPECT_EQ(s.default_user(), "user");
  EXPECT_EQ(s.global_env().count("EVIL"), 0u);

  InitRequest same;
  same.access_token = "secret-1";
  same.default_user = "other";
  EXPECT_EQ(s.apply_init(same), InitOutcome::applied);
  EXPECT_EQ(s.default_user(), "other");
  EXPECT_TRUE(s.token_matches("secret-1"));
}

// A sandbox restored from another's snapshot gets its own token: only the holder of the current
// one (presented as X-Access-Token) may hand it over.
TEST(AgentState, HolderOfTheTokenMayReplaceIt) {
  AgentState s;
  InitRequest first;
  first.access_token = "source-token";
  ASSERT_EQ(s.apply_init(first), InitOutcome::applied);

  InitRequest stranger;
  stranger.access_token = "child-token";
  stranger.presented_token = "guess";
  EXPECT_EQ(s.apply_init(stranger), InitOutcome::token_mismatch);
  EXPECT_TRUE(s.token_matches("source-token"));

  InitRequest handover;
  handover.access_token = "child-token";
  handover.presented_token = "source-token";
  EXPECT_EQ(s.apply_init(handover), InitOutcome::applied);
  EXPECT_TRUE(s.token_matches("child-token"));
  EXPECT_FALSE(s.token_matches("source-token"));
}

TEST(AgentState, StaleTimestampIsAcknowledgedButNotApplied) {
  AgentState s;
  InitRequest newer;
  newer.timestamp = at(2000);
  newer.env_vars = std::map<std::string, std::string>{{"GEN", "2"}};
  newer.default_user = "user";
  ASSERT_EQ(s.apply_init(newer), InitOutcome::applied);

  InitRequest older;
  older.timestamp = at(1000);
  older.env_vars = std::map<std::string, std::string>{{"GEN", "1"}};
  older.default_user = "old";
  older.default_workdir = "/old";
  EXPECT_EQ(s.apply_init(older), InitOutcome::stale);
  EXPECT_EQ(s.global_env().at("GEN"), "2");
  EXPECT_EQ(s.default_user(), "user");
  EXPECT_FALSE(s.default_workdir().has_value());

  // Equal is not newer.
  InitRequest equal = older;
  equal.timestamp = at(2000);
  EXPECT_EQ(s.apply_init(equal), InitOutcome::stale);
  EXPECT_EQ(s.global_env().at("GEN"), "2");

  // The stale one did not lower the high-water mark: 1500 is still stale.
  InitRequest mid = older;
  mid.timestamp = at(1500);
  EXPECT_EQ(s.apply_init(mid), InitOutcome::stale);

  InitRequest newest = older;
  newest.timestamp = at(2000) + nanoseconds(1);
  newest.env_vars = std::map<std::string, std::string>{{"GEN", "3"}};
  EXPECT_EQ(s.apply_init(newest), InitOutcome::applied);
  EXPECT_EQ(s.global_env().at("GEN"), "3");
  EXPECT_EQ(s.default_user(), "old");

  // No timestamp is always applied.
  InitRequest untimed;
  untimed.env_vars = std::map<std::string, std::string>{{"GEN", "4"}};
  EXPECT_EQ(s.apply_init(untimed), InitOutcome::applied);
  EXPECT_EQ(s.global_env().at("GEN"), "4");
}

TEST(AgentState, TokenCheckComesBeforeStaleness) {
  AgentState s;
  InitRequest first;
  first.access_token = "tok";
  first.timestamp = at(2000);
  ASSERT_EQ(s.apply_init(first), InitOutcome::applied);
  InitRequest stale_wrong;
  stale_wrong.access_token = "bad";
  stale_wrong.timestamp = at(1000);
  EXPECT_EQ(s.apply_init(stale_wrong), InitOutcome::token_mismatch);
  InitRequest stale_right;
  stale_right.access_token = "tok";
  stale_right.timestamp = at(1000);
  EXPECT_EQ(s.apply_init(stale_right), InitOutcome::stale);
}

TEST(AgentState, EnvVarsReplaceAndInternalSurvives) {
  AgentState s;
  InitRequest a;
  a.env_vars = std::map<std::string, std::string>{{"A", "1"}, {"B", "2"}, {"E2B_SANDBOX", "false"}};
  ASSERT_EQ(s.apply_init(a), InitOutcome::applied);
  auto env = s.global_env();
  EXPECT_EQ(env.at("A"), "1");
  EXPECT_EQ(env.at("B"), "2");
  EXPECT_EQ(env.at("E2B_SANDBOX"), "true");  // internal wins

  InitRequest b;
  b.env_vars = std::map<std::string, std::string>{{"C", "3"}};
  ASSERT_EQ(s.apply_init(b), InitOutcome::applied);
  env = s.global_env();
  EXPECT_EQ(env.count("A"), 0u);  // replaced, not merged
  EXPECT_EQ(env.count("B"), 0u);
  EXPECT_EQ(env.at("C"), "3");
  EXPECT_EQ(env.at("E2B_SANDBOX"), "true");

  // Absent envVars leaves them alone; an empty map clears them.
  InitRequest none;
  ASSERT_EQ(s.apply_init(none), InitOutcome::applied);
  EXPECT_EQ(s.global_env().at("C"), "3");
  InitRequest cleared;
  cleared.env_vars = std::map<std::string, std::string>{};
  ASSERT_EQ(s.apply_init(cleared), InitOutcome::applied);
  EXPECT_EQ(s.global_env(), (std::map<std::string, std::string>{{"E2B_SANDBOX", "true"}}));

  s.set_internal_env("E2B_SANDBOX_ID", "sbx");
  InitRequest c;
  c.env_vars = std::map<std::string, std::string>{{"E2B_SANDBOX_ID", "spoofed"}};
  ASSERT_EQ(s.apply_init(c), InitOutcome::applied);
  EXPECT_EQ(s.global_env().at("E2B_SANDBOX_ID"), "sbx");
}

TEST(AgentState, DefaultUserAndWorkdirOnlyWhenNonEmpty) {
  AgentState s;
  InitRequest empty;
  empty.default_user = "";
  empty.default_workdir = "";
  ASSERT_EQ(s.apply_init(empty), InitOutcome::applied);
  EXPECT_EQ(s.default_user(), "root");
  EXPECT_FALSE(s.default_workdir().has_value());

  InitRequest set;
  set.default_user = "user";
  set.default_workdir = "/home/user/app";
  ASSERT_EQ(s.apply_init(set), InitOutcome::applied);
  EXPECT_EQ(s.default_user(), "user");
  EXPECT_EQ(s.default_workdir(), "/home/user/app");

  InitRequest again;
  again.default_user = "";
  again.default_workdir = "";
  ASSERT_EQ(s.apply_init(again), InitOutcome::applied);
  EXPECT_EQ(s.default_user(), "user");
  EXPECT_EQ(s.default_workdir(), "/home/user/app");

  InitRequest absent;
  ASSERT_EQ(s.apply_init(absent), InitOutcome::applied);
  EXPECT_EQ(s.default_user(), "user");
}

// The body parser and the state together, as the /init handler uses them.
TEST(AgentState, ParsedBodiesEndToEnd) {
  AgentState s;
  auto first = parse(R"({"accessToken":"abc123","timestamp":"2026-01-01T00:00:01Z","envVars":{"X":"1"}})");
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(s.apply_init(*first), InitOutcome::applied);
  auto replay = parse(R"({"accessToken":"abc123","timestamp":"2026-01-01T00:00:00Z","envVars":{"X":"0"}})");
  ASSERT_TRUE(replay.has_value());
  EXPECT_EQ(s.apply_init(*replay), InitOutcome::stale);
  EXPECT_EQ(s.global_env().at("X"), "1");
  auto anon = parse("");
  ASSERT_TRUE(anon.has_value());
  EXPECT_EQ(s.apply_init(*anon), InitOutcome::unauthorized_reset);
}
