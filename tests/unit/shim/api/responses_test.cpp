#include <gtest/gtest.h>

#include "api/errors.hpp"
#include "api/responses.hpp"

namespace cove::shim::api {
namespace {
using nlohmann::json;
using namespace std::chrono;

SandboxView sample_view() {
  SandboxView v;
  SandboxRecord& r = v.record;
  r.id = "i1a2b3c4d5e6f7g8h9j0";
  r.team_id = "team_x";
  r.template_id = "base";
  r.alias = "my-alias";
  r.state = SandboxState::running;
  r.started_at = TimePoint(seconds(1700000000)) + milliseconds(250);
  r.end_at = TimePoint(seconds(1700000300)) + milliseconds(250);
  r.metadata = {{"user", "alice"}};
  r.env_vars = {{"SECRET", "never shown"}};
  r.cpu_count = 2;
  r.memory_mb = 512;
  r.disk_size_mb = 2048;
  r.envd_version = "0.6.13";
  r.auto_pause = true;
  r.auto_resume = true;
  r.allow_internet_access = false;
  r.network_json = R"({"allowOut":["1.1.1.1"]})";
  v.envd_access_token = "tok123";
  return v;
}

TEST(Responses, SandboxCarriesTokensAndNullableFields) {
  ResponseContext ctx;
  auto j = sandbox_json(sample_view(), ctx);
  EXPECT_EQ(j, json::parse(R"({"sandboxID":"i1a2b3c4d5e6f7g8h9j0","templateID":"base","alias":"my-alias",
      "clientID":"6532622b","envdVersion":"0.6.13","envdAccessToken":"tok123","trafficAccessToken":null,
      "domain":null})"));

  SandboxView v = sample_view();
  v.envd_access_token.clear();
  v.record.alias.clear();
  v.traffic_access_token = "traffic";
  ctx.domain = "cove.example.com";
  j = sandbox_json(v, ctx);
  EXPECT_FALSE(j.contains("envdAccessToken"));
  EXPECT_FALSE(j.contains("alias"));
  EXPECT_EQ(j["trafficAccessToken"], "traffic");
  EXPECT_EQ(j["domain"], "cove.example.com");
  v.domain = "per-sandbox.example.com";
  EXPECT_EQ(sandbox_json(v, ctx)["domain"], "per-sandbox.example.com");
}

TEST(Responses, SandboxDetailHasEveryFieldTheSdkReads) {
  auto j = sandbox_detail_json(sample_view(), ResponseContext{});
  EXPECT_EQ(j, json::parse(R"({"sandboxID":"i1a2b3c4d5e6f7g8h9j0","templateID":"base","alias":"my-alias",
      "clientID":"6532622b","startedAt":"2023-11-14T22:13:20.250Z","endAt":"2023-11-14T22:18:20.250Z",
      "state":"running","cpuCount":2,"memoryMB":512,"diskSizeMB":2048,"envdVersion":"0.6.13",
      "metadata":{"user":"alice"},"envdAccessToken":"tok123","allowInternetAccess":false,
      "network":{"allowOut":["1.1.1.1"]},"lifecycle":{"onTimeout":"pause","autoResume":true},
      "domain":null,"volumeMounts":[]})"));
  EXPECT_EQ(j.dump().find("never shown"), std::string::npos);  // env vars are not part of any response

  SandboxView v = sample_view();
  v.record.auto_pause = false;
  v.record.auto_resume = false;
  v.record.network_json = "null";
  v.record.metadata.clear();
  v.record.state = SandboxState::paused;
  j = sandbox_detail_json(v, ResponseContext{});
  EXPECT_EQ(j["lifecycle"], json::parse(R"({"onTimeout":"kill","autoResume":false})"));
  EXPECT_FALSE(j.contains("network"));
  EXPECT_EQ(j["metadata"], json::object());
  EXPECT_EQ(j["state"], "paused");
}

TEST(Responses, ListedSandboxIsTheListShape) {
  auto j = listed_sandbox_json(sample_view(), ResponseContext{});
  for (const char* key : {"sandboxID", "templateID", "alias", "clientID", "startedAt", "endAt", "cpuCount", "memoryMB",
                          "diskSizeMB", "metadata", "state", "envdVersion", "volumeMounts"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 13u);
  EXPECT_FALSE(j.contains("envdAccessToken"));
}

TEST(Responses, WireStates) {
  EXPECT_EQ(wire_state(SandboxState::creating), "running");
  EXPECT_EQ(wire_state(SandboxState::resuming), "running");
  EXPECT_EQ(wire_state(SandboxState::pausing), "paused");
  EXPECT_EQ(wire_state(SandboxState::paused), "paused");
}

TEST(Responses, Metric) {
  MetricSample s;
  s.timestamp = TimePoint(seconds(1700000000));
  s.cpu_count = 2;
  s.cpu_used_pct = 12.5;
  s.mem_used = 1000;
  s.mem_total = 2000;
  s.disk_used = 3000;
  s.disk_total = 4000;
  EXPECT_EQ(metric_json(s), json::parse(R"({"timestamp":"2023-11-14T22:13:20.000Z","timestampUnix":1700000000,
      "cpuCount":2,"cpuUsedPct":12.5,"memUsed":1000,"memTotal":2000,"memCache":0,"diskUsed":3000,"diskTotal":4000})"));
}

TEST(Responses, TemplateAndAlias) {
  Template t;
  t.id = "base";
  t.aliases = {"base", "default"};
  t.build_id = "build-1";
  t.envd_version = "0.6.13";
  t.is_public = true;
  t.created_at = TimePoint(seconds(1700000000));
  t.updated_at = TimePoint(seconds(1700000001));
  t.layers = {"/var/lib/cove/rootfs/secret-host-path"};
  auto j = template_json(t);
  EXPECT_EQ(j, json::parse(R"({"templateID":"base","buildID":"build-1","cpuCount":2,"memoryMB":512,
      "diskSizeMB":2048,"public":true,"aliases":["base","default"],"names":["base","default"],
      "createdAt":"2023-11-14T22:13:20.000Z","updatedAt":"2023-11-14T22:13:21.000Z","createdBy":null,
      "lastSpawnedAt":null,"spawnCount":0,"buildCount":1,"buildStatus":"ready","envdVersion":"0.6.13"})"));
  EXPECT_EQ(j.dump().find("/var/lib"), std::string::npos);
  EXPECT_EQ(template_alias_json(t), json::parse(R"({"templateID":"base","public":true})"));
  t.build_id.clear();  // registered, no build finished yet
  EXPECT_EQ(template_json(t)["buildStatus"], "waiting");
}

TEST(Responses, SnapshotInfoIsIdAndNamesOnly) {
  Snapshot snap;
  snap.id = "snap_abc";
  snap.team_id = "team_x";
  snap.sandbox_id = "i1a2b3c4d5e6f7g8h9j0";
  snap.names = {"my-snap:default"};
  snap.template_id = "base";
  snap.env_vars = {{"SECRET", "never shown"}};
  EXPECT_EQ(snapshot_info_json(snap), json::parse(R"({"snapshotID":"snap_abc","names":["my-snap:default"]})"));
  snap.names.clear();
  EXPECT_EQ(snapshot_info_json(snap), json::parse(R"({"snapshotID":"snap_abc","names":[]})"));
}

TEST(Responses, ErrorBody) {
  EXPECT_EQ(json::parse(error_body(404, "Not found")), json::parse(R"({"code":404,"message":"Not found"})"));
  EXPECT_NO_THROW(json::parse(error_body(400, std::string("bad \xff utf8"))));
}

}  // namespace
}  // namespace cove::shim::api
