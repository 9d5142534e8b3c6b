// Pause, resume, the cold tier, snapshots and forks in the manager, over the fake runtime: which
// runtime calls each transition makes, what the store records, and what clients are told.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "manager_fixture.hpp"

namespace cove::shim {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

size_t count_requests(const FakeRuntime& runtime, const std::string& head) {
  size_t n = 0;
  for (auto& r : runtime.requests) n += r.rfind(head, 0) == 0;
  return n;
}

class SandboxPauseTest : public SandboxManagerTest {
 protected:
  SandboxPauseTest() {
    checkpoints = std::filesystem::temp_directory_path() /
                  ("cove-pause-test-" + std::to_string(::getpid()) + "-" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(checkpoints);
    options.checkpoints_dir = checkpoints.string();
    options.pause.cold_after = 3600s;
    options.pause.retention = 7200s;
    remake_manager();
  }
  ~SandboxPauseTest() override { std::filesystem::remove_all(checkpoints); }

  SandboxView create_with(const std::function<void(CreateRequest&)>& tweak) {
    CreateRequest request;
    request.timeout_s = 60;
    tweak(request);
    return run(manager->create("team_a", request));
  }
  SandboxState state_of(const std::string& id) { return store.sandbox(id)->state; }
  void wait_until(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + 2s;
    while (!done() && std::chrono::steady_clock::now() < deadline) spin(5ms);
  }
  std::string cold_dir(const std::string& id) { return (checkpoints / "sandboxes" / id).string(); }

  std::filesystem::path checkpoints;
};

TEST_F(SandboxPauseTest, WarmPauseFreezesAndConnectThaws) {
  auto v = create();
  const std::string id = v.record.id;
  run_void(manager->pause("team_a", id, true));
  EXPECT_EQ(state_of(id), SandboxState::paused);
  EXPECT_EQ(store.sandbox(id)->paused_as, PauseKind::warm);
  EXPECT_EQ(runtime.frozen, std::vector<std::string>{id});
  EXPECT_EQ(count_requests(runtime, "POST /freeze"), 1u);  // the agent quiesced before the freeze
  // Paused: no routes, no tokens, listed as paused.
  EXPECT_FALSE(run(manager->open_port(id, 49983)));
  EXPECT_EQ(manager->envd_token(id), std::nullopt);
  ListRequest paused_only;
  paused_only.states = {SandboxState::paused};
  EXPECT_EQ(run(manager->list("team_a", paused_only)).items.size(), 1u);
  // Twice: a conflict, which the SDK reports as false.
  EXPECT_EQ(status_of([&] { run_void(manager->pause("team_a", id, true)); }), 409);

  clock.advance(30s);
  size_t inits = count_requests(runtime, "POST /init");
  auto [view, resumed] = run(manager->connect("team_a", id, 120, true));
  EXPECT_TRUE(resumed);
  EXPECT_EQ(view.record.state, SandboxState::running);
  EXPECT_EQ(view.record.end_at, clock.now() + 120s);  // a resume grants the asked lifetime
  EXPECT_EQ(runtime.thawed, std::vector<std::string>{id});
  EXPECT_EQ(count_requests(runtime, "POST /init"), inits + 1);  // fresh /init re-arms the agent
  EXPECT_NE(runtime.requests.back().find("GET /health"), std::string::npos);
  EXPECT_EQ(store.sandbox(id)->paused_as, PauseKind::none);
  EXPECT_TRUE(runtime.specs.size() == 1);  // a warm resume starts nothing
  // Running again: connect is a plain connect.
  EXPECT_FALSE(run(manager->connect("team_a", id, 10, true)).second);
}

TEST_F(SandboxPauseTest, PauseOfUnknownKilledOrForeignIsNotFound) {
  auto v = create();
  EXPECT_EQ(status_of([&] { run_void(manager->pause("team_a", "nope", true)); }), 404);
  EXPECT_EQ(status_of([&] { run_void(manager->pause("team_b", v.record.id, true)); }), 404);
  run(manager->kill("team_a", v.record.id));
  EXPECT_EQ(status_of([&] { run_void(manager->pause("team_a", v.record.id, true)); }), 404);
  EXPECT_TRUE(runtime.frozen.empty());
}

TEST_F(SandboxPauseTest, FilesystemPauseStopsAndResumeBootsOverTheKeptDisk) {
  auto v = create();
  const std::string id = v.record.id;
  run_void(manager->pause("team_a", id, false));
  EXPECT_EQ(store.sandbox(id)->paused_as, PauseKind::filesystem);
  EXPECT_EQ(runtime.stopped, std::vector<std::string>{id});
  EXPECT_TRUE(runtime.frozen.empty());
  auto [view, resumed] = run(manager->connect("team_a", id, 60, true));
  EXPECT_TRUE(resumed);
  ASSERT_EQ(runtime.specs.size(), 2u);
  EXPECT_EQ(runtime.specs[1].id, id);
  EXPECT_EQ(runtime.specs[1].slot, v.record.slot);
  EXPECT_EQ(runtime.specs[1].disk_source, kKeepDisk);
  EXPECT_TRUE(runtime.specs[1].checkpoint_dir.empty());
  EXPECT_EQ(view.record.state, SandboxState::running);
}

TEST_F(SandboxPauseTest, ColdTierCheckpointsThenRestoresAndForgetsTheImages) {
  auto v = create();
  const std::string id = v.record.id;
  run_void(manager->pause("team_a", id, true));
  run_void(manager->make_cold(std::string(kOperatorTeam), id));
  EXPECT_EQ(runtime.checkpointed, std::vector<std::string>{id});
  EXPECT_EQ(store.sandbox(id)->paused_as, PauseKind::cold);
  EXPECT_TRUE(exists(cold_dir(id)));
  EXPECT_FALSE(exists(cold_dir(id) + ".partial"));
  // Already cold: nothing more to do.
  run_void(manager->make_cold(std::string(kOperatorTeam), id));
  EXPECT_EQ(runtime.checkpointed.size(), 1u);

  auto [view, resumed] = run(manager->connect("team_a", id, 60, true));
  EXPECT_TRUE(resumed);
  ASSERT_EQ(runtime.specs.size(), 2u);
  EXPECT_EQ(runtime.specs[1].checkpoint_dir, cold_dir(id));
  EXPECT_EQ(runtime.specs[1].disk_source, kKeepDisk);
  EXPECT_FALSE(exists(cold_dir(id)));  // used up
  EXPECT_EQ(view.record.state, SandboxState::running);
}

TEST_F(SandboxPauseTest, CheckpointOfARunningSandboxIsAConflict) {
  auto v = create();
  EXPECT_EQ(status_of([&] { run_void(manager->make_cold(std::string(kOperatorTeam), v.record.id)); }), 409);
  EXPECT_TRUE(runtime.checkpointed.empty());
}

TEST_F(SandboxPauseTest, FailedCheckpointLeavesItWarm) {
  auto v = create();
  const std::string id = v.record.id;
  run_void(manager->pause("team_a", id, true));
  runtime.fail_checkpoint = true;
  EXPECT_EQ(status_of([&] { run_void(manager->make_cold(std::string(kOperatorTeam), id)); }), 500);
  EXPECT_EQ(state_of(id), SandboxState::paused);
  EXPECT_EQ(store.sandbox(id)->paused_as, PauseKind::warm);
  EXPECT_FALSE(exists(cold_dir(id)));
  EXPECT_FALSE(exists(cold_dir(id) + ".partial"));
  // Thawed only for the agent to quiesce again before the dump, and frozen again.
  EXPECT_EQ(runtime.thawed, std::vector<std::string>{id});
  EXPECT_EQ(runtime.frozen, (std::vector<std::string>{id, id}));
  EXPECT_EQ(count_requests(runtime, "POST /freeze"), 2u);
  // And it still resumes from memory.
  EXPECT_TRUE(run(manager->connect("team_a", id, 60, true)).second);
  EXPECT_EQ(runtime.thawed, (std::vector<std::string>{id, id}));
}

TEST_F(SandboxPauseTest, ADumpThatRacedAConnectionIsRetriedAfterQuiescingAgain) {
  auto v = create();
  const std::string id = v.record.id;
  run_void(manager->pause("team_a", id, true));
  runtime.busy_checkpoints = 2;
  size_t freezes = count_requests(runtime, "POST /freeze");
  run_void(manager->make_cold(std::string(kOperatorTeam), id));
  EXPECT_EQ(store.sandbox(id)->paused_as, PauseKind::cold);
  EXPECT_EQ(count_requests(runtime, "POST /freeze"), freezes + 3);  // quiesced before each attempt
  // A third race in a row gives up, and the pause stays warm.
  auto w = create();
  run_void(manager->pause("team_a", w.record.id, true));
  runtime.busy_checkpoints = 3;
  EXPECT_EQ(status_of([&] { run_void(manager->make_cold(std::string(kOperatorTeam), w.record.id)); }), 500);
  EXPECT_EQ(store.sandbox(w.record.id)->paused_as, PauseKind::warm);
}

TEST_F(SandboxPauseTest, ResumeWithoutMemoryDiscardsTheMemoryState) {
  auto v = create();
  const std::string id = v.record.id;
  run_void(manager->pause("team_a", id, true));
  run_void(manager->make_cold(std::string(kOperatorTeam), id));
  auto [view, resumed] = run(manager->connect("team_a", id, 60, false));
  EXPECT_TRUE(resumed);
  EXPECT_TRUE(contains(runtime.stopped, id));
  ASSERT_EQ(runtime.specs.size(), 2u);
  EXPECT_TRUE(runtime.specs[1].checkpoint_dir.empty());  // booted, not restored
  EXPECT_EQ(runtime.specs[1].disk_source, kKeepDisk);
  EXPECT_FALSE(exists(cold_dir(id)));
}

TEST_F(SandboxPauseTest, TimeoutPausesWhenAskedAndGoesColdAfterTheDelay) {
  options.pause.cold_after = 0s;
  remake_manager();
  manager->start_background();
  auto v = create_with([](CreateRequest& r) { r.auto_pause = true; });
  const std::string id = v.record.id;
  clock.advance(61s);
  wait_until([&] { return store.sandbox(id)->paused_as == PauseKind::cold; });
  EXPECT_EQ(state_of(id), SandboxState::paused);  // not killed
  EXPECT_EQ(store.sandbox(id)->paused_as, PauseKind::cold);
  EXPECT_TRUE(runtime.destroyed.empty());
  EXPECT_TRUE(run(manager->connect("team_a", id, 60, true)).second);
}

TEST_F(SandboxPauseTest, TimeoutWithoutMemoryPausesFilesystemOnly) {
  manager->start_background();
  auto v = create_with([](CreateRequest& r) {
    r.auto_pause = true;
    r.auto_pause_memory = false;
  });
  clock.advance(61s);
  wait_until([&] { return state_of(v.record.id) == SandboxState::paused; });
  EXPECT_EQ(store.sandbox(v.record.id)->paused_as, PauseKind::filesystem);
  EXPECT_EQ(runtime.stopped, std::vector<std::string>{v.record.id});
}

TEST_F(SandboxPauseTest, RetentionKillsAPausedSandbox) {
  manager->start_background();
  auto v = create();
  run_void(manager->pause("team_a", v.record.id, true));
  clock.advance(7199s);
  spin(30ms);
  EXPECT_EQ(state_of(v.record.id), SandboxState::paused);
  clock.advance(1s);
  wait_until([&] { return state_of(v.record.id) == SandboxState::killed; });
  EXPECT_EQ(state_of(v.record.id), SandboxState::killed);
  EXPECT_TRUE(contains(runtime.destroyed, v.record.id));
}

TEST_F(SandboxPauseTest, TrafficResumesOnlyWhenAskedAndNeverAFilesystemPause) {
  auto asked = create_with([](CreateRequest& r) { r.auto_resume = true; });
  auto not_asked = create();
  run_void(manager->pause("team_a", asked.record.id, true));
  run_void(manager->pause("team_a", not_asked.record.id, true));
  EXPECT_FALSE(run(manager->open_port(not_asked.record.id, 49983)));
  EXPECT_EQ(state_of(not_asked.record.id), SandboxState::paused);
  auto lease = run(manager->open_port(asked.record.id, 49983));
  EXPECT_TRUE(lease);
  EXPECT_EQ(state_of(asked.record.id), SandboxState::running);
  lease.reset();

  run_void(manager->pause("team_a", asked.record.id, false));
  EXPECT_FALSE(run(manager->open_port(asked.record.id, 49983)));
  EXPECT_EQ(state_of(asked.record.id), SandboxState::paused);
}

TEST_F(SandboxPauseTest, KillOfAColdPauseRemovesItsCheckpoint) {
  auto v = create();
  run_void(manager->pause("team_a", v.record.id, true));
  run_void(manager->make_cold(std::string(kOperatorTeam), v.record.id));
  ASSERT_TRUE(exists(cold_dir(v.record.id)));
  EXPECT_TRUE(run(manager->kill("team_a", v.record.id)));
  EXPECT_FALSE(exists(cold_dir(v.record.id)));
  EXPECT_EQ(state_of(v.record.id), SandboxState::killed);
}

TEST_F(SandboxPauseTest, PauseSeversOpenLeases) {
  auto v = create();
  auto lease = run(manager->open_port(v.record.id, 49983));
  ASSERT_TRUE(lease);
  run_void(manager->pause("team_a", v.record.id, true));
  char byte;
  boost::system::error_code ec;
  lease->socket().read_some(net::buffer(&byte, 1), ec);
  EXPECT_TRUE(ec);  // shut down by the pause
}

TEST_F(SandboxPauseTest, ReconcileKeepsColdAndWarmPausesAcrossARestart) {
  auto cold = create();
  auto warm = create();
  run_void(manager->pause("team_a", cold.record.id, true));
  run_void(manager->make_cold(std::string(kOperatorTeam), cold.record.id));
  run_void(manager->pause("team_a", warm.record.id, true));
  // The shim dies; the warm one's frozen processes live on, the cold one has only its files.
  runtime.recoverable = {warm.record.id};
  runtime.on_host = {cold.record.id, warm.record.id};
  runtime.frozen.clear();
  remake_manager();
  auto report = manager->reconcile();
  EXPECT_EQ(report.recovered, 2u);
  EXPECT_EQ(report.lost, 0u);
  EXPECT_TRUE(runtime.destroyed.empty());
  EXPECT_EQ(store.sandbox(cold.record.id)->paused_as, PauseKind::cold);
  EXPECT_EQ(store.sandbox(warm.record.id)->paused_as, PauseKind::warm);
  EXPECT_EQ(runtime.frozen, std::vector<std::string>{warm.record.id});  // made sure it is frozen
  // Both resume after the restart.
  EXPECT_TRUE(run(manager->connect("team_a", cold.record.id, 60, true)).second);
  EXPECT_EQ(runtime.specs.back().checkpoint_dir, cold_dir(cold.record.id));
  EXPECT_TRUE(run(manager->connect("team_a", warm.record.id, 60, true)).second);
}

TEST_F(SandboxPauseTest, ReconcileAfterADeathMidPauseRunsOn) {
  auto v = create();
  SandboxRecord r = *store.sandbox(v.record.id);
  uint64_t g = r.generation;
  r.state = SandboxState::pausing;
  r.paused_as = PauseKind::warm;
  r.generation++;
  store.update_sandbox(r, g);
  runtime.recoverable = {v.record.id};
  runtime.on_host = {v.record.id};
  remake_manager();
  manager->reconcile();
  EXPECT_EQ(state_of(v.record.id), SandboxState::running);
  EXPECT_EQ(runtime.thawed, std::vector<std::string>{v.record.id});
}

TEST_F(SandboxPauseTest, SnapshotLeavesTheSourceRunningAndStartsIndependentChildren) {
  auto v = create();
  const std::string id = v.record.id;
  Snapshot snap = run(manager->create_snapshot("team_a", id, "prepared"));
  EXPECT_EQ(snap.sandbox_id, id);
  EXPECT_EQ(snap.names, std::vector<std::string>{"prepared:default"});
  EXPECT_EQ(runtime.frozen, std::vector<std::string>{id});
  EXPECT_EQ(runtime.thawed, std::vector<std::string>{id});
  ASSERT_EQ(runtime.checkpointed, std::vector<std::string>{id});
  ASSERT_EQ(runtime.exported.size(), 1u);
  EXPECT_EQ(state_of(id), SandboxState::running);
  const std::string dir = (checkpoints / "snapshots" / snap.id).string();
  EXPECT_TRUE(exists(dir + "/images"));
  EXPECT_EQ(runtime.exported[0].second, dir + ".partial/disk.img");

  CreateRequest request;
  request.template_ref = "prepared";  // by name, as well as by id
  auto child = run(manager->create("team_a", request));
  EXPECT_NE(child.record.id, id);
  EXPECT_NE(child.envd_access_token, v.envd_access_token);
  EXPECT_EQ(child.record.env_vars.at("FOO"), "bar");  // inherited
  const SandboxSpec& spec = runtime.specs.back();
  EXPECT_EQ(spec.id, child.record.id);
  EXPECT_NE(spec.slot, v.record.slot);
  EXPECT_EQ(spec.checkpoint_dir, dir + "/images");
  EXPECT_EQ(spec.disk_source, dir + "/disk.img");
  // The restored agent holds the source's token: the child's /init presents it.
  std::string init;
  for (auto& r : runtime.requests) {
    if (r.rfind("POST /init", 0) == 0) init = r;
  }
  EXPECT_NE(init.find("X-Access-Token: " + v.envd_access_token), std::string::npos);
  EXPECT_NE(init.find(child.envd_access_token), std::string::npos);

  EXPECT_EQ(run(manager->list_snapshots("team_a", id, "")).size(), 1u);
  EXPECT_EQ(run(manager->list_snapshots("team_b", "", "")).size(), 0u);
  EXPECT_FALSE(run(manager->delete_snapshot("team_b", snap.id)));
  EXPECT_TRUE(run(manager->delete_snapshot("team_a", snap.id)));
  EXPECT_FALSE(run(manager->delete_snapshot("team_a", snap.id)));
  EXPECT_FALSE(exists(dir));
  CreateRequest gone;
  gone.template_ref = snap.id;
  EXPECT_EQ(status_of([&] { run(manager->create("team_a", gone)); }), 404);
}

TEST_F(SandboxPauseTest, SnapshotOfUnknownOrForeignIsNotFound) {
  auto v = create();
  EXPECT_EQ(status_of([&] { run(manager->create_snapshot("team_a", "nope", "")); }), 404);
  EXPECT_EQ(status_of([&] { run(manager->create_snapshot("team_b", v.record.id, "")); }), 404);
}

TEST_F(SandboxPauseTest, FailedSnapshotThawsTheSourceAndLeavesNothing) {
  auto v = create();
  runtime.fail_checkpoint = true;
  EXPECT_EQ(status_of([&] { run(manager->create_snapshot("team_a", v.record.id, "")); }), 500);
  EXPECT_EQ(runtime.thawed, std::vector<std::string>{v.record.id});
  EXPECT_EQ(state_of(v.record.id), SandboxState::running);
  EXPECT_TRUE(store.snapshots("", "").empty());
  EXPECT_TRUE(!exists((checkpoints / "snapshots").string()) || std::filesystem::is_empty(checkpoints / "snapshots"));
}

TEST_F(SandboxPauseTest, ForkStartsCountIndependentChildrenFromOneCheckpoint) {
  auto v = create();
  auto children = run(manager->fork("team_a", v.record.id, 3, 120));
  ASSERT_EQ(children.size(), 3u);
  std::set<std::string> ids;
  for (auto& c : children) {
    ASSERT_TRUE(c.sandbox);
    ids.insert(c.sandbox->record.id);
    EXPECT_EQ(c.sandbox->record.state, SandboxState::running);
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_FALSE(ids.count(v.record.id));
  EXPECT_EQ(runtime.checkpointed.size(), 1u);  // one checkpoint for all
  EXPECT_TRUE(store.snapshots("", "").empty()); // the fork's snapshot is not kept
  EXPECT_EQ(state_of(v.record.id), SandboxState::running);
  EXPECT_EQ(status_of([&] { run(manager->fork("team_a", v.record.id, 0, 120)); }), 400);
  EXPECT_EQ(status_of([&] { run(manager->fork("team_a", "nope", 1, 120)); }), 404);
}

TEST_F(SandboxPauseTest, ForkReportsEachChildsFailureSeparately) {
  auto v = create();
  runtime.fail_start = true;
  auto children = run(manager->fork("team_a", v.record.id, 2, 120));
  ASSERT_EQ(children.size(), 2u);
  for (auto& c : children) {
    EXPECT_FALSE(c.sandbox);
    EXPECT_EQ(c.error_code, 500);
    EXPECT_FALSE(c.error_message.empty());
  }
  EXPECT_EQ(state_of(v.record.id), SandboxState::running);
}

}  // namespace
}  // namespace cove::shim
