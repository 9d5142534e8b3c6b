#include "lifecycle/sandbox_manager.hpp"

#include "auth/access_tokens.hpp"
#include "auth/api_keys.hpp"
#include "manager_fixture.hpp"

namespace cove::shim {
namespace {

TEST_F(SandboxManagerTest, CreateStartsInitialisesAndRuns) {
  auto v = create();
  EXPECT_EQ(v.record.state, SandboxState::running);
  EXPECT_EQ(v.record.template_id, "base");
  EXPECT_EQ(v.record.alias, "base");
  EXPECT_EQ(v.record.envd_version, "0.6.13");
  EXPECT_EQ(v.record.end_at - v.record.started_at, 60s);
  EXPECT_EQ(v.envd_access_token, TokenIssuer("seed").envd_access_token(v.record.id));
  EXPECT_EQ(v.domain, "cove.test");
  ASSERT_EQ(runtime.specs.size(), 1u);
  EXPECT_EQ(runtime.specs[0].layers, (std::vector<std::string>{"/agent-layer", "/rootfs"}));
  EXPECT_EQ(runtime.specs[0].memory_mb, 512);
  ASSERT_EQ(runtime.requests.size(), 2u);  // /init then /health
  EXPECT_NE(runtime.requests[0].find("POST /init"), std::string::npos);
  EXPECT_NE(runtime.requests[0].find(R"("FOO":"bar")"), std::string::npos);
  EXPECT_NE(runtime.requests[0].find(v.envd_access_token), std::string::npos);
  EXPECT_NE(runtime.requests[0].find(R"("defaultUser":"user")"), std::string::npos);
  EXPECT_NE(runtime.requests[1].find("GET /health"), std::string::npos);
  auto stored = store.sandbox(v.record.id);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->state, SandboxState::running);
  EXPECT_EQ(stored->generation, v.record.generation);
}

TEST_F(SandboxManagerTest, UnknownTemplateIsNotFound) {
  CreateRequest request;
  request.template_ref = "nope";
  EXPECT_EQ(status_of([&] { run(manager->create("team_a", request)); }), 404);
  EXPECT_TRUE(runtime.specs.empty());
}

TEST_F(SandboxManagerTest, TimeoutBoundsAreChecked) {
  CreateRequest request;
  request.timeout_s = 0;
  EXPECT_EQ(status_of([&] { run(manager->create("team_a", request)); }), 400);
  request.timeout_s = 3601;
  EXPECT_EQ(status_of([&] { run(manager->create("team_a", request)); }), 400);
}

TEST_F(SandboxManagerTest, KillTwiceIsTrueThenFalse) {
  auto v = create();
  EXPECT_TRUE(run(manager->kill("team_a", v.record.id)));
  EXPECT_FALSE(run(manager->kill("team_a", v.record.id)));
  EXPECT_EQ(runtime.destroyed, std::vector<std::string>{v.record.id});
  EXPECT_EQ(store.sandbox(v.record.id)->state, SandboxState::killed);
  EXPECT_EQ(status_of([&] { run(manager->get("team_a", v.record.id)); }), 404);
  EXPECT_EQ(manager->live_count(), 0u);
}

TEST_F(SandboxManagerTest, OtherTeamSeesNothing) {
  auto v = create("team_a");
  EXPECT_EQ(status_of([&] { run(manager->get("team_b", v.record.id)); }), 404);
  EXPECT_FALSE(run(manager->kill("team_b", v.record.id)));
  EXPECT_EQ(status_of([&] { run(manager->set_timeout("team_b", v.record.id, 10)); }), 404);
  EXPECT_TRUE(run(manager->list("team_b", ListRequest{})).items.empty());
  EXPECT_EQ(run(manager->get("team_a", v.record.id)).record.state, SandboxState::running);
}

TEST_F(SandboxManagerTest, OperatorSeesEveryTeam) {
  auto a = create("team_a");
  auto b = create("team_b");
  const std::string op(kOperatorTeam);
  EXPECT_EQ(run(manager->list(op, ListRequest{})).items.size(), 2u);
  EXPECT_EQ(run(manager->list("team_a", ListRequest{})).items.size(), 1u);
  EXPECT_TRUE(run(manager->kill(op, b.record.id)));
  EXPECT_EQ(run(manager->get(op, a.record.id)).record.id, a.record.id);
}

TEST_F(SandboxManagerTest, KillDuringCreateIsFencedByGeneration) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  runtime.gate_ = &gate;
  CreateRequest request;
  auto creating = net::co_spawn(io, manager->create("team_a", request), net::use_future);
  // Wait until the record exists (creating), then kill it.
  std::string id;
  while (id.empty()) {
    spin(1ms);
    for (auto& r : store.live_sandboxes()) id = r.id;
  }
  EXPECT_TRUE(run(manager->kill("team_a", id)));
  release.set_value();
  while (creating.wait_for(0s) != std::future_status::ready) spin();
  try {
    creating.get();
    FAIL() << "create succeeded after a kill";
  } catch (const LifecycleError& e) {
    EXPECT_EQ(e.status(), 404);
  }
  EXPECT_EQ(store.sandbox(id)->state, SandboxState::killed);
  EXPECT_EQ(runtime.destroyed, std::vector<std::string>{id});
  EXPECT_TRUE(runtime.requests.empty());  // never initialised a fenced sandbox
}

TEST_F(SandboxManagerTest, CrashDuringCreateIsInternalNotNotFound) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  runtime.gate_ = &gate;
  CreateRequest request;
  auto creating = net::co_spawn(io, manager->create("team_a", request), net::use_future);
  std::string id;
  while (id.empty()) {
    spin(1ms);
    for (auto& r : store.live_sandboxes()) id = r.id;
  }
  runtime.exit_callback(id);  // its init died by itself while starting
  release.set_value();
  while (creating.wait_for(0s) != std::future_status::ready) spin();
  try {
    creating.get();
    FAIL() << "create succeeded after its sandbox died";
  } catch (const LifecycleError& e) {
    EXPECT_EQ(e.status(), 500);
  }
  EXPECT_EQ(store.sandbox(id)->state, SandboxState::killed);
}

TEST_F(SandboxManagerTest, StartFailureIsInternalAndCleansUp) {
  runtime.fail_start = true;
  CreateRequest request;
  EXPECT_EQ(status_of([&] { run(manager->create("team_a", request)); }), 500);
  EXPECT_EQ(manager->live_count(), 0u);
  ASSERT_EQ(runtime.destroyed.size(), 1u);
  EXPECT_EQ(store.sandbox(runtime.destroyed[0])->state, SandboxState::killed);
  runtime.fail_start = false;
  auto v = create();
  EXPECT_EQ(v.record.slot, 0);  // the failed one's slot was freed
}

TEST_F(SandboxManagerTest, ConnectExtendsButNeverShortens) {
  auto v = create();
  auto end = v.record.end_at;
  auto shorter = run(manager->connect("team_a", v.record.id, 10, true));
  EXPECT_EQ(shorter.first.record.end_at, end);
  EXPECT_FALSE(shorter.second);
  auto longer = run(manager->connect("team_a", v.record.id, 600, true));
  EXPECT_EQ(longer.first.record.end_at, clock.now() + 600s);
  run_void(manager->set_timeout("team_a", v.record.id, 5));  // set_timeout may shorten
  EXPECT_EQ(run(manager->get("team_a", v.record.id)).record.end_at, clock.now() + 5s);
  run_void(manager->refresh("team_a", v.record.id, 1));  // refresh only extends
  EXPECT_EQ(run(manager->get("team_a", v.record.id)).record.end_at, clock.now() + 5s);
  EXPECT_EQ(store.sandbox(v.record.id)->end_at, clock.now() + 5s);
}

TEST_F(SandboxManagerTest, ReaperKillsAtEndAt) {
  manager->start_background();
  auto v = create();
  clock.advance(59s);
  spin(30ms);
  EXPECT_EQ(run(manager->get("team_a", v.record.id)).record.state, SandboxState::running);
  clock.advance(1s);
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (manager->live_count() > 0 && std::chrono::steady_clock::now() < deadline) spin(5ms);
  EXPECT_EQ(manager->live_count(), 0u);
  EXPECT_EQ(store.sandbox(v.record.id)->state, SandboxState::killed);
  EXPECT_EQ(status_of([&] { run(manager->connect("team_a", v.record.id, 10, true)); }), 404);
}

TEST_F(SandboxManagerTest, ListPagesNewestFirstWithMetadataFilter) {
  std::vector<std::string> made;
  for (int i = 0; i < 3; ++i) {
    made.push_back(create("team_a", {{"user", "alice"}}).record.id);
    clock.advance(1s);
  }
  create("team_a", {{"user", "bob"}});
  ListRequest request;
  request.metadata = {{"user", "alice"}};
  request.limit = 1;
  std::vector<std::string> seen;
  for (int page = 0; page < 5; ++page) {
    auto result = run(manager->list("team_a", request));
    ASSERT_EQ(result.items.size(), 1u);
    seen.push_back(result.items[0].record.id);
    if (!result.next_token) break;
    request.next_token = result.next_token;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{made[2], made[1], made[0]}));
  request.next_token = "garbage";
  EXPECT_EQ(status_of([&] { run(manager->list("team_a", request)); }), 400);
}

TEST_F(SandboxManagerTest, KillSeversOpenLeases) {
  auto v = create();
  runtime.open_ports.insert(8080);
  auto lease = run(manager->open_port(v.record.id, 8080));
  ASSERT_TRUE(lease);
  EXPECT_TRUE(run(manager->kill("team_a", v.record.id)));
  char buf[8];
  boost::system::error_code ec;
  lease->socket().non_blocking(false);
  size_t n = lease->socket().read_some(net::buffer(buf), ec);
  EXPECT_TRUE(ec || n == 0) << "lease still readable after kill";
  EXPECT_FALSE(run(manager->open_port(v.record.id, 8080)));  // gone: no lease
}

TEST_F(SandboxManagerTest, ClosedPortThrowsRefused) {
  auto v = create();
  try {
    run(manager->open_port(v.record.id, 9999));
    FAIL() << "expected connection_refused";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), boost::system::errc::connection_refused);
  }
  EXPECT_FALSE(run(manager->open_port("unknown", 49983)));
}

TEST_F(SandboxManagerTest, TokensOnlyForRunningSandboxes) {
  auto v = create();
  EXPECT_EQ(manager->envd_token(v.record.id), v.envd_access_token);
  EXPECT_EQ(manager->traffic_token(v.record.id), std::string());
  EXPECT_EQ(manager->envd_token("unknown"), std::nullopt);
}

TEST_F(SandboxManagerTest, ExitedSandboxIsTornDown) {
  auto v = create();
  ASSERT_TRUE(runtime.exit_callback);
  runtime.exit_callback(v.record.id);
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (manager->live_count() > 0 && std::chrono::steady_clock::now() < deadline) spin(5ms);
  EXPECT_EQ(store.sandbox(v.record.id)->state, SandboxState::killed);
}

TEST_F(SandboxManagerTest, MetricsAreSampled) {
  manager->start_background();
  auto v = create();
  runtime.cpu_ns = 1'000'000'000;
  clock.advance(5s);
  auto deadline = std::chrono::steady_clock::now() + 2s;
  std::vector<MetricSample> samples;
  while (samples.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    spin(10ms);
    samples = run(manager->metrics("team_a", v.record.id, std::nullopt, std::nullopt));
  }
  ASSERT_GE(samples.size(), 2u);
  EXPECT_EQ(samples.back().mem_total, 512u << 20);
  EXPECT_EQ(samples.back().cpu_count, 2);
  auto latest = run(manager->latest_metrics("team_a", {v.record.id, "other"}));
  EXPECT_EQ(latest.size(), 1u);
}

TEST_F(SandboxManagerTest, ApiKeysResolveToTeams) {
  auto team = store.ensure_team("acme");
  std::string key = generate_api_key();
  store.add_api_key(ApiKey{hash_api_key(key), team.id, mask_api_key(key), Clock::now()});
  EXPECT_EQ(manager->team_for_api_key(key), team.id);
  EXPECT_EQ(manager->team_for_api_key("e2b_" + std::string(40, '0')), std::nullopt);
  EXPECT_EQ(manager->team_for_api_key("not-a-key"), std::nullopt);
}

TEST_F(SandboxManagerTest, AccessTokensResolveToTeamsButNotAsApiKeys) {
  auto team = store.ensure_team("acme");
  std::string token = generate_access_token();
  store.add_access_token(AccessToken{hash_access_token(token), team.id, mask_access_token(token), Clock::now()});
  auto found = manager->team_for_access_token(token);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, team.id);
  EXPECT_EQ(found->name, "acme");
  EXPECT_EQ(manager->team_for_access_token("sk_e2b_" + std::string(40, '0')), std::nullopt);
  EXPECT_EQ(manager->team_for_access_token("not-a-token"), std::nullopt);
  EXPECT_EQ(manager->team_for_api_key(token), std::nullopt);
  // An API key's hash stored as a token still needs a token's format to be accepted.
  std::string key = generate_api_key();
  store.add_access_token(AccessToken{hash_api_key(key), team.id, mask_api_key(key), Clock::now()});
  EXPECT_EQ(manager->team_for_access_token(key), std::nullopt);
}

TEST_F(SandboxManagerTest, ReconcileKeepsSurvivorsAndCleansTheRest) {
  SandboxRecord alive, dead, half;
  for (auto* r : {&alive, &dead, &half}) {
    r->team_id = "team_a";
    r->template_id = "base";
    r->state = SandboxState::running;
    r->generation = 3;
  }
  alive.id = "alive1";
  alive.slot = 4;
  dead.id = "dead1";
  dead.slot = 5;
  half.id = "half1";
  half.state = SandboxState::creating;
  for (auto* r : {&alive, &dead, &half}) store.insert_sandbox(*r);
  runtime.recoverable = {"alive1"};
  runtime.on_host = {"alive1", "dead1", "orphan1"};
  auto report = manager->reconcile();
  EXPECT_EQ(report.recovered, 1u);
  EXPECT_EQ(report.lost, 2u);
  EXPECT_EQ(report.orphans, 1u);
  EXPECT_EQ(store.sandbox("dead1")->state, SandboxState::killed);
  EXPECT_EQ(store.sandbox("half1")->state, SandboxState::killed);
  EXPECT_EQ(store.sandbox("alive1")->state, SandboxState::running);
  EXPECT_EQ(manager->live_count(), 1u);
  auto destroyed = runtime.destroyed;
  std::sort(destroyed.begin(), destroyed.end());
  EXPECT_EQ(destroyed, (std::vector<std::string>{"dead1", "half1", "orphan1"}));
}

TEST(CpuPercent, ShareOfTheSandboxCpus) {
  EXPECT_DOUBLE_EQ(cpu_used_percent(1'000'000'000, std::chrono::seconds(1), 2), 50.0);
  EXPECT_DOUBLE_EQ(cpu_used_percent(0, std::chrono::seconds(1), 2), 0.0);
  EXPECT_DOUBLE_EQ(cpu_used_percent(5'000'000'000, std::chrono::seconds(1), 2), 100.0);
  EXPECT_DOUBLE_EQ(cpu_used_percent(10, std::chrono::nanoseconds(0), 2), 0.0);
}

}  // namespace
}  // namespace cove::shim
