#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "scratch_dir.hpp"
#include "store/migrations.hpp"
#include "store/store.hpp"

namespace cove::shim {
namespace {

using namespace std::chrono_literals;
using test::ScratchDir;

TimePoint at(int64_t seconds) { return TimePoint(std::chrono::seconds(seconds)); }

SandboxRecord sandbox(std::string id, std::string team, TimePoint started,
                      SandboxState state = SandboxState::running) {
  SandboxRecord r;
  r.id = std::move(id);
  r.team_id = std::move(team);
  r.template_id = "base";
  r.state = state;
  r.started_at = started;
  r.end_at = started + 300s;
  return r;
}

std::vector<std::string> ids(const std::vector<SandboxRecord>& recs) {
  std::vector<std::string> out;
  for (auto& r : recs) out.push_back(r.id);
  return out;
}

// Undoes migration 4 (pauses and snapshots), to make a database as an older Cove wrote it.
constexpr const char* kUndoPauses =
    "DROP TABLE snapshots; ALTER TABLE sandboxes DROP COLUMN auto_pause_memory; "
    "ALTER TABLE sandboxes DROP COLUMN paused_as; ALTER TABLE sandboxes DROP COLUMN paused_at; ";

class SqliteStoreTest : public ::testing::Test {
 protected:
  std::string db_path() const { return dir_ / "cove.db"; }
  std::unique_ptr<Store> open() { return open_sqlite_store(db_path()); }
  ScratchDir dir_;
};

TEST_F(SqliteStoreTest, CreatesThePrivateDatabaseInWalMode) {
  auto store = open();
  struct stat st {};
  ASSERT_EQ(stat(db_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  store->insert_sandbox(sandbox("a", "team_1", at(1)));
  // WAL mode leaves a -wal file beside the database while it is open, private like the database.
  ASSERT_EQ(stat((db_path() + "-wal").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(SqliteStoreTest, SandboxRoundTripsEveryField) {
  auto store = open();
  SandboxRecord r = sandbox("sbx1", "team_1", TimePoint(123456789012345678ns));
  r.alias = "my-alias";
  r.state = SandboxState::paused;
  r.generation = 7;
  r.end_at = TimePoint(223456789012345678ns);
  r.metadata = {{"user", "alice"}, {"k\"ey", "v\u00e9"}};
  r.env_vars = {{"PATH", "/bin"}, {"EMPTY", ""}};
  r.cpu_count = 4;
  r.memory_mb = 1024;
  r.disk_size_mb = 4096;
  r.envd_version = "0.6.13";
  r.secure = false;
  r.allow_internet_access = false;
  r.auto_pause = true;
  r.auto_resume = true;
  r.network_json = R"({"allowOut":["1.1.1.1"]})";
  r.slot = 42;
  store->insert_sandbox(r);

  auto got = store->sandbox("sbx1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, r.id);
  EXPECT_EQ(got->team_id, r.team_id);
  EXPECT_EQ(got->template_id, r.template_id);
  EXPECT_EQ(got->alias, r.alias);
  EXPECT_EQ(got->state, r.state);
  EXPECT_EQ(got->generation, r.generation);
  EXPECT_EQ(got->started_at, r.started_at);
  EXPECT_EQ(got->end_at, r.end_at);
  EXPECT_EQ(got->metadata, r.metadata);
  EXPECT_EQ(got->env_vars, r.env_vars);
  EXPECT_EQ(got->cpu_count, 4);
  EXPECT_EQ(got->memory_mb, 1024);
  EXPECT_EQ(got->disk_size_mb, 4096);
  EXPECT_EQ(got->envd_version, "0.6.13");
  EXPECT_FALSE(got->secure);
  EXPECT_FALSE(got->allow_internet_access);
  EXPECT_TRUE(got->auto_pause);
  EXPECT_TRUE(got->auto_resume);
  EXPECT_EQ(got->network_json, r.network_json);
  EXPECT_EQ(got->slot, 42);
  EXPECT_FALSE(store->sandbox("nope"));
}

TEST_F(SqliteStoreTest, PauseFieldsRoundTripThroughInsertAndUpdate) {
  auto store = open();
  // The defaults: memory kept on an auto-pause, never paused.
  store->insert_sandbox(sandbox("fresh", "team_1", at(1)));
  auto fresh = store->sandbox("fresh");
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(fresh->auto_pause_memory);
  EXPECT_EQ(fresh->paused_as, PauseKind::none);
  EXPECT_EQ(fresh->paused_at, TimePoint{});

  SandboxRecord r = sandbox("sbx1", "team_1", at(10), SandboxState::paused);
  r.auto_pause_memory = false;
  r.paused_as = PauseKind::filesystem;
  r.paused_at = TimePoint(123456789012345678ns);
  store->insert_sandbox(r);
  auto got = store->sandbox("sbx1");
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->auto_pause_memory);
  EXPECT_EQ(got->paused_as, PauseKind::filesystem);
  EXPECT_EQ(got->paused_at, r.paused_at);

  // Every kind survives an update, and so does turning the memory flag back on.
  for (PauseKind kind : {PauseKind::warm, PauseKind::cold, PauseKind::none}) {
    SandboxRecord next = *got;
    next.generation = got->generation + 1;
    next.paused_as = kind;
    next.paused_at = got->paused_at + 1s;
    next.auto_pause_memory = !got->auto_pause_memory;
    ASSERT_TRUE(store->update_sandbox(next, got->generation)) << to_string(kind);
    got = store->sandbox("sbx1");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->paused_as, kind);
    EXPECT_EQ(got->paused_at, next.paused_at);
    EXPECT_EQ(got->auto_pause_memory, next.auto_pause_memory);
  }
  // Listing reads the same columns.
  auto listed = store->list_sandboxes(SandboxQuery{.team_id = "team_1", .states = {SandboxState::paused}});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].paused_at, got->paused_at);
}

TEST_F(SqliteStoreTest, PauseKindNames) {
  for (PauseKind kind : {PauseKind::none, PauseKind::warm, PauseKind::cold, PauseKind::filesystem}) {
    EXPECT_EQ(parse_pause_kind(to_string(kind)), kind);
  }
  EXPECT_EQ(to_string(PauseKind::none), "");
  EXPECT_EQ(to_string(PauseKind::cold), "cold");
  EXPECT_FALSE(parse_pause_kind("Cold"));
  EXPECT_FALSE(parse_pause_kind("frozen"));
}

TEST_F(SqliteStoreTest, AnUnknownPauseKindInTheDatabaseIsAStoreError) {
  auto store = open();
  store->insert_sandbox(sandbox("odd", "team_1", at(1)));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE sandboxes SET paused_as = 'lukewarm' WHERE id = 'odd'", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THROW(store->sandbox("odd"), StoreError);
}

TEST_F(SqliteStoreTest, DuplicateInsertThrowsWithoutEchoingValues) {
  auto store = open();
  auto r = sandbox("dup-id-secretish", "team_1", at(1));
  store->insert_sandbox(r);
  try {
    store->insert_sandbox(r);
    FAIL() << "duplicate insert succeeded";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()).find("dup-id-secretish"), std::string::npos) << e.what();
  }
}

TEST_F(SqliteStoreTest, UpdateIsCompareAndSetOnGeneration) {
  auto store = open();
  auto r = sandbox("s", "team_1", at(1));
  r.generation = 1;
  store->insert_sandbox(r);

  auto next = r;
  next.generation = 2;
  next.state = SandboxState::paused;
  EXPECT_TRUE(store->update_sandbox(next, 1));
  EXPECT_EQ(store->sandbox("s")->state, SandboxState::paused);

  // A writer that still believes generation 1 is fenced off.
  auto stale = r;
  stale.generation = 2;
  stale.state = SandboxState::killed;
  EXPECT_FALSE(store->update_sandbox(stale, 1));
  EXPECT_EQ(store->sandbox("s")->state, SandboxState::paused);
  EXPECT_EQ(store->sandbox("s")->generation, 2u);

  auto missing = sandbox("ghost", "team_1", at(1));
  EXPECT_FALSE(store->update_sandbox(missing, 0));
  EXPECT_FALSE(store->sandbox("ghost"));
}

TEST_F(SqliteStoreTest, ConcurrentCompareAndSetHasOneWinner) {
  auto store = open();
  auto r = sandbox("race", "team_1", at(1));
  store->insert_sandbox(r);
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto mine = r;
      mine.generation = 1;
      mine.slot = i;
      if (store->update_sandbox(mine, 0)) ++wins;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(store->sandbox("race")->generation, 1u);
}

TEST_F(SqliteStoreTest, ListOrdersNewestFirstThenIdDescending) {
  auto store = open();
  store->insert_sandbox(sandbox("b", "t", at(10)));
  store->insert_sandbox(sandbox("a", "t", at(20)));
  store->insert_sandbox(sandbox("c", "t", at(10)));
  store->insert_sandbox(sandbox("d", "t", at(5)));
  store->insert_sandbox(sandbox("x", "other-team", at(30)));
  SandboxQuery q;
  q.team_id = "t";
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"a", "c", "b", "d"}));
}

TEST_F(SqliteStoreTest, EmptyTeamListsEveryTeam) {
  auto store = open();
  store->insert_sandbox(sandbox("a", "t1", at(10)));
  store->insert_sandbox(sandbox("b", "t2", at(20)));
  SandboxQuery q;  // team_id empty: the operator's view
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"b", "a"}));
  q.team_id = "t1";
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"a"}));
}

TEST_F(SqliteStoreTest, ListStatesDefaultToRunningAndPaused) {
  auto store = open();
  store->insert_sandbox(sandbox("run", "t", at(6), SandboxState::running));
  store->insert_sandbox(sandbox("pau", "t", at(5), SandboxState::paused));
  store->insert_sandbox(sandbox("cre", "t", at(4), SandboxState::creating));
  store->insert_sandbox(sandbox("kil", "t", at(3), SandboxState::killed));
  store->insert_sandbox(sandbox("pin", "t", at(2), SandboxState::pausing));
  SandboxQuery q;
  q.team_id = "t";
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"run", "pau"}));
  q.states = {SandboxState::paused};
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"pau"}));
  q.states = {SandboxState::killed, SandboxState::creating, SandboxState::pausing};
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"cre", "kil", "pin"}));
}

TEST_F(SqliteStoreTest, ListMetadataMustMatchEveryPairExactly) {
  auto store = open();
  auto a = sandbox("a", "t", at(3));
  a.metadata = {{"env", "prod"}, {"owner", "ann"}};
  auto b = sandbox("b", "t", at(2));
  b.metadata = {{"env", "prod"}};
  auto c = sandbox("c", "t", at(1));
  c.metadata = {{"env", "production"}, {"owner", "ann"}};
  for (auto& r : {a, b, c}) store->insert_sandbox(r);

  SandboxQuery q;
  q.team_id = "t";
  q.metadata = {{"env", "prod"}};
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"a", "b"}));
  q.metadata = {{"env", "prod"}, {"owner", "ann"}};
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"a"}));
  q.metadata = {{"owner", "ann"}};
  q.limit = 1;
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"a"}));
  // The limit counts matches, not rows scanned: the next match is past a non-matching row.
  q.after = std::make_pair(a.started_at, a.id);
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"c"}));
  q.metadata = {{"missing", ""}};
  q.after.reset();
  EXPECT_TRUE(store->list_sandboxes(q).empty());
}

TEST_F(SqliteStoreTest, CursorPagesOneByOneAcrossEqualStartTimes) {
  auto store = open();
  // Five records, three sharing a start time: paging must neither skip nor repeat any.
  store->insert_sandbox(sandbox("p1", "t", at(100)));
  store->insert_sandbox(sandbox("p3", "t", at(100)));
  store->insert_sandbox(sandbox("p2", "t", at(100)));
  store->insert_sandbox(sandbox("p0", "t", at(200)));
  store->insert_sandbox(sandbox("p4", "t", at(50)));
  SandboxQuery q;
  q.team_id = "t";
  q.limit = 1;
  std::vector<std::string> seen;
  for (int page = 0; page < 10; ++page) {
    auto got = store->list_sandboxes(q);
    if (got.empty()) break;
    ASSERT_EQ(got.size(), 1u);
    seen.push_back(got[0].id);
    q.after = std::make_pair(got[0].started_at, got[0].id);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"p0", "p3", "p2", "p1", "p4"}));

  q.limit = 2;
  q.after = std::make_pair(at(100), std::string("p3"));
  EXPECT_EQ(ids(store->list_sandboxes(q)), (std::vector<std::string>{"p2", "p1"}));
  q.limit = 0;
  EXPECT_TRUE(store->list_sandboxes(q).empty());
}

TEST_F(SqliteStoreTest, LiveSandboxesExcludeOnlyKilled) {
  auto store = open();
  store->insert_sandbox(sandbox("k", "t", at(1), SandboxState::killed));
  store->insert_sandbox(sandbox("c", "t", at(2), SandboxState::creating));
  store->insert_sandbox(sandbox("r", "u", at(3), SandboxState::running));
  store->insert_sandbox(sandbox("x", "t", at(4), SandboxState::killing));
  auto live = ids(store->live_sandboxes());
  std::sort(live.begin(), live.end());
  EXPECT_EQ(live, (std::vector<std::string>{"c", "r", "x"}));
}

TEST_F(SqliteStoreTest, PurgeForgetsKilledRecordsWrittenBeforeTheCutoff) {
  auto store = open();
  auto before_writes = Clock::now() - 1s;
  store->insert_sandbox(sandbox("k1", "t", at(1), SandboxState::killed));
  store->insert_sandbox(sandbox("k2", "t", at(2), SandboxState::killed));
  store->insert_sandbox(sandbox("r", "t", at(3), SandboxState::running));
  // Nothing was written before the cutoff: nothing goes.
  EXPECT_EQ(store->purge_killed(before_writes), 0u);
  EXPECT_TRUE(store->sandbox("k1"));
  EXPECT_EQ(store->purge_killed(Clock::now() + 1s), 2u);
  EXPECT_FALSE(store->sandbox("k1"));
  EXPECT_FALSE(store->sandbox("k2"));
  EXPECT_TRUE(store->sandbox("r"));
}

TEST_F(SqliteStoreTest, ReopenKeepsEverything) {
  std::string team_id;
  {
    auto store = open();
    team_id = store->ensure_team("default").id;
    store->add_api_key(ApiKey{"hash1", team_id, "e2b_1234\u2026cdef", at(5)});
    store->add_access_token(AccessToken{"tokenhash1", team_id, "sk_e2b_1234\u2026cdef", at(6)});
    Template t;
    t.id = "base";
    t.aliases = {"base-v1"};
    store->upsert_template(t);
    store->insert_sandbox(sandbox("s", team_id, at(9)));
  }
  auto store = open();
  EXPECT_EQ(store->ensure_team("default").id, team_id);
  EXPECT_EQ(store->team_for_key_hash("hash1"), team_id);
  EXPECT_EQ(store->team_for_access_token_hash("tokenhash1"), team_id);
  EXPECT_TRUE(store->template_by_id_or_alias("base-v1"));
  ASSERT_TRUE(store->sandbox("s"));
  EXPECT_EQ(store->sandbox("s")->started_at, at(9));
}

TEST_F(SqliteStoreTest, MigrationsAreIdempotentAndRecordTheVersion) {
  open();
  open();  // a second open finds the schema current and changes nothing
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), latest_schema_version());
  sqlite3_finalize(st);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST_F(SqliteStoreTest, RefusesADatabaseFromANewerCove) {
  open();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
  std::string sql = "PRAGMA user_version = " + std::to_string(latest_schema_version() + 1);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THROW(open(), StoreError);
}

TEST_F(SqliteStoreTest, RefusesAFileThatIsNotADatabase) {
  {
    FILE* f = fopen(db_path().c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("this is not an SQLite database, just some text that is long enough to look like a header", f);
    fclose(f);
  }
  EXPECT_THROW(open(), StoreError);
}

TEST_F(SqliteStoreTest, OpenFailureDoesNotNameThePath) {
  std::string path = dir_ / "no-such-dir/cove.db";
  try {
    open_sqlite_store(path);
    FAIL() << "opened a database in a missing directory";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()).find(dir_.path()), std::string::npos) << e.what();
  }
}

TEST_F(SqliteStoreTest, TeamsAreCreatedOnceByName) {
  auto store = open();
  Team a = store->ensure_team("default");
  Team again = store->ensure_team("default");
  Team b = store->ensure_team("other");
  EXPECT_EQ(a.id, again.id);
  EXPECT_NE(a.id, b.id);
  ASSERT_EQ(a.id.size(), 25u);
  EXPECT_EQ(a.id.substr(0, 5), "team_");
  EXPECT_EQ(a.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789", 5), std::string::npos);
  EXPECT_EQ(a.name, "default");
  auto found = store->team_by_id(a.id);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name, "default");
  EXPECT_EQ(found->created_at, a.created_at);
  EXPECT_FALSE(store->team_by_id("team_missing"));
}

TEST_F(SqliteStoreTest, ApiKeysResolveToTheirTeam) {
  auto store = open();
  Team t = store->ensure_team("default");
  store->add_api_key(ApiKey{"h1", t.id, "m", at(1)});
  EXPECT_EQ(store->team_for_key_hash("h1"), t.id);
  EXPECT_FALSE(store->team_for_key_hash("h2"));
  EXPECT_THROW(store->add_api_key(ApiKey{"h1", t.id, "m", at(1)}), StoreError);
  // A key must belong to a team that exists.
  EXPECT_THROW(store->add_api_key(ApiKey{"h3", "team_nobody", "m", at(1)}), StoreError);
}

TEST_F(SqliteStoreTest, AccessTokensResolveToTheirTeamApartFromApiKeys) {
  auto store = open();
  Team t = store->ensure_team("default");
  Team other = store->ensure_team("other");
  store->add_access_token(AccessToken{"t1", t.id, "sk_e2b_1234\u2026cdef", at(1)});
  store->add_access_token(AccessToken{"t2", other.id, "m", at(2)});
  store->add_api_key(ApiKey{"k1", t.id, "m", at(1)});
  EXPECT_EQ(store->team_for_access_token_hash("t1"), t.id);
  EXPECT_EQ(store->team_for_access_token_hash("t2"), other.id);
  EXPECT_FALSE(store->team_for_access_token_hash("t3"));
  // Tokens and keys are separate credentials: neither hash resolves as the other.
  EXPECT_FALSE(store->team_for_access_token_hash("k1"));
  EXPECT_FALSE(store->team_for_key_hash("t1"));
  EXPECT_THROW(store->add_access_token(AccessToken{"t1", t.id, "m", at(1)}), StoreError);
  EXPECT_THROW(store->add_access_token(AccessToken{"t4", "team_nobody", "m", at(1)}), StoreError);
}

TEST_F(SqliteStoreTest, MigrationToAccessTokensKeepsAnOlderDatabasesKeys) {
  std::string team_id;
  {
    auto store = open();
    team_id = store->ensure_team("default").id;
    store->add_api_key(ApiKey{"k1", team_id, "m", at(1)});
  }
  // Back to schema 2, as a database written before access tokens existed.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
  const std::string downgrade = std::string(kUndoPauses) + "DROP TABLE access_tokens; PRAGMA user_version = 2";
  ASSERT_EQ(sqlite3_exec(db, downgrade.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  auto store = open();
  EXPECT_EQ(store->team_for_key_hash("k1"), team_id);
  store->add_access_token(AccessToken{"t1", team_id, "m", at(3)});
  EXPECT_EQ(store->team_for_access_token_hash("t1"), team_id);
}

TEST_F(SqliteStoreTest, MigrationToPausesKeepsAnOlderDatabasesSandboxes) {
  {
    auto store = open();
    SandboxRecord r = sandbox("old1", "team_1", at(5), SandboxState::paused);
    r.metadata = {{"k", "v"}};
    r.slot = 3;
    // Values the migration must not keep: schema 3 had no such columns.
    r.auto_pause_memory = false;
    r.paused_as = PauseKind::cold;
    r.paused_at = at(7);
    store->insert_sandbox(r);
    store->insert_sandbox(sandbox("old2", "team_1", at(6)));
    Snapshot snap;
    snap.id = "snap1";
    snap.team_id = "team_1";
    snap.created_at = at(1);
    store->insert_snapshot(snap);
  }
  // Back to schema 3, as a database written before pauses and snapshots existed.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
  const std::string downgrade = std::string(kUndoPauses) + "PRAGMA user_version = 3";
  ASSERT_EQ(sqlite3_exec(db, downgrade.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = open();
  auto old1 = store->sandbox("old1");
  ASSERT_TRUE(old1);
  EXPECT_EQ(old1->state, SandboxState::paused);
  EXPECT_EQ(old1->metadata, (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_EQ(old1->slot, 3);
  EXPECT_TRUE(old1->auto_pause_memory);
  EXPECT_EQ(old1->paused_as, PauseKind::none);
  EXPECT_EQ(old1->paused_at, TimePoint{});
  EXPECT_TRUE(store->sandbox("old2"));
  EXPECT_EQ(store->live_sandboxes().size(), 2u);
  // The snapshots table is new and empty.
  EXPECT_TRUE(store->snapshots("", "").empty());
  Snapshot snap;
  snap.id = "snap2";
  snap.team_id = "team_1";
  store->insert_snapshot(snap);
  EXPECT_TRUE(store->snapshot("snap2"));
}

Snapshot snapshot_of(std::string id, std::string team, std::string source, TimePoint created) {
  Snapshot s;
  s.id = std::move(id);
  s.team_id = std::move(team);
  s.sandbox_id = std::move(source);
  s.template_id = "base";
  s.created_at = created;
  return s;
}

std::vector<std::string> snapshot_ids(const std::vector<Snapshot>& snaps) {
  std::vector<std::string> out;
  for (auto& s : snaps) out.push_back(s.id);
  return out;
}

TEST_F(SqliteStoreTest, SnapshotRoundTripsEveryField) {
  auto store = open();
  Snapshot s = snapshot_of("snap_1", "team_1", "sbx1", TimePoint(123456789012345678ns));
  s.names = {"my-snap:default", "n\u00e4me:v2"};
  s.template_id = "code-interpreter";
  s.cpu_count = 4;
  s.memory_mb = 2048;
  s.disk_size_mb = 8192;
  s.envd_version = "0.6.13";
  s.env_vars = {{"A", "1"}, {"EMPTY", ""}, {"Q\"", "v\nw"}};
  store->insert_snapshot(s);
  auto got = store->snapshot("snap_1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, s.id);
  EXPECT_EQ(got->team_id, s.team_id);
  EXPECT_EQ(got->sandbox_id, s.sandbox_id);
  EXPECT_EQ(got->names, s.names);
  EXPECT_EQ(got->template_id, s.template_id);
  EXPECT_EQ(got->cpu_count, 4);
  EXPECT_EQ(got->memory_mb, 2048);
  EXPECT_EQ(got->disk_size_mb, 8192);
  EXPECT_EQ(got->envd_version, "0.6.13");
  EXPECT_EQ(got->env_vars, s.env_vars);
  EXPECT_EQ(got->created_at, s.created_at);
  EXPECT_FALSE(store->snapshot("nope"));
  // No names at all is kept as none.
  store->insert_snapshot(snapshot_of("snap_2", "team_1", "sbx1", at(1)));
  ASSERT_TRUE(store->snapshot("snap_2"));
  EXPECT_TRUE(store->snapshot("snap_2")->names.empty());
}

TEST_F(SqliteStoreTest, SnapshotsListOldestFirstWithTeamAndSourceFilters) {
  auto store = open();
  store->insert_snapshot(snapshot_of("s_c", "team_1", "sbxA", at(30)));
  store->insert_snapshot(snapshot_of("s_a", "team_1", "sbxB", at(10)));
  store->insert_snapshot(snapshot_of("s_b", "team_2", "sbxC", at(20)));
  store->insert_snapshot(snapshot_of("s_e", "team_1", "sbxA", at(10)));  // same time as s_a: id decides
  store->insert_snapshot(snapshot_of("s_d", "team_1", "sbxA", at(5)));

  EXPECT_EQ(snapshot_ids(store->snapshots("team_1", "")), (std::vector<std::string>{"s_d", "s_a", "s_e", "s_c"}));
  EXPECT_EQ(snapshot_ids(store->snapshots("team_2", "")), std::vector<std::string>{"s_b"});
  EXPECT_EQ(snapshot_ids(store->snapshots("team_1", "sbxA")), (std::vector<std::string>{"s_d", "s_e", "s_c"}));
  EXPECT_TRUE(store->snapshots("team_2", "sbxA").empty());  // another team's source
  EXPECT_TRUE(store->snapshots("team_3", "").empty());
  EXPECT_EQ(snapshot_ids(store->snapshots("", "")), (std::vector<std::string>{"s_d", "s_a", "s_e", "s_b", "s_c"}));
  EXPECT_EQ(snapshot_ids(store->snapshots("", "sbxC")), std::vector<std::string>{"s_b"});
}

TEST_F(SqliteStoreTest, SnapshotDeleteAndDuplicates) {
  auto store = open();
  store->insert_snapshot(snapshot_of("snap-secretish", "team_1", "sbx1", at(1)));
  try {
    store->insert_snapshot(snapshot_of("snap-secretish", "team_2", "sbx2", at(2)));
    FAIL() << "duplicate snapshot insert succeeded";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()).find("snap-secretish"), std::string::npos) << e.what();
  }
  // The first one is unchanged.
  EXPECT_EQ(store->snapshot("snap-secretish")->team_id, "team_1");
  EXPECT_TRUE(store->delete_snapshot("snap-secretish"));
  EXPECT_FALSE(store->snapshot("snap-secretish"));
  EXPECT_FALSE(store->delete_snapshot("snap-secretish"));
  EXPECT_FALSE(store->delete_snapshot("never-existed"));
  EXPECT_TRUE(store->snapshots("", "").empty());
  // The id is free again.
  store->insert_snapshot(snapshot_of("snap-secretish", "team_2", "sbx2", at(2)));
  EXPECT_EQ(store->snapshot("snap-secretish")->team_id, "team_2");
}

TEST_F(SqliteStoreTest, SnapshotsSurviveAReopen) {
  {
    auto store = open();
    store->insert_snapshot(snapshot_of("keep", "team_1", "sbx1", at(1)));
  }
  auto store = open();
  ASSERT_TRUE(store->snapshot("keep"));
  EXPECT_EQ(store->snapshot("keep")->sandbox_id, "sbx1");
}

TEST_F(SqliteStoreTest, TemplatesResolveByIdOrAliasAndUpsertKeepsCreation) {
  auto store = open();
  Template t;
  t.id = "base";
  t.aliases = {"base-latest", "debian"};
  t.build_id = "b1";
  t.cpu_count = 4;
  t.memory_mb = 2048;
  t.disk_size_mb = 8192;
  t.envd_version = "0.6.13";
  t.layers = {"/layers/top", "/layers/bottom"};
  t.is_public = true;
  t.created_at = at(100);
  t.updated_at = at(100);
  store->upsert_template(t);

  for (auto name : {"base", "base-latest", "debian"}) {
    auto got = store->template_by_id_or_alias(name);
    ASSERT_TRUE(got) << name;
    EXPECT_EQ(got->id, "base");
    EXPECT_EQ(got->aliases, t.aliases);
    EXPECT_EQ(got->build_id, "b1");
    EXPECT_EQ(got->cpu_count, 4);
    EXPECT_EQ(got->memory_mb, 2048);
    EXPECT_EQ(got->disk_size_mb, 8192);
    EXPECT_EQ(got->envd_version, "0.6.13");
    EXPECT_EQ(got->layers, t.layers);
    EXPECT_TRUE(got->is_public);
    EXPECT_EQ(got->created_at, at(100));
  }
  EXPECT_FALSE(store->template_by_id_or_alias("nope"));

  auto updated = t;
  updated.build_id = "b2";
  updated.aliases = {"debian"};
  updated.created_at = at(200);
  updated.updated_at = at(200);
  store->upsert_template(updated);
  auto got = store->template_by_id_or_alias("base");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->build_id, "b2");
  EXPECT_EQ(got->aliases, std::vector<std::string>{"debian"});
  EXPECT_EQ(got->created_at, at(100));
  EXPECT_EQ(got->updated_at, at(200));
  EXPECT_FALSE(store->template_by_id_or_alias("base-latest"));

  Template other;
  other.id = "other";
  store->upsert_template(other);
  auto all = store->templates();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, "base");
  EXPECT_EQ(all[0].aliases, std::vector<std::string>{"debian"});
  EXPECT_EQ(all[1].id, "other");
}

TEST_F(SqliteStoreTest, AnAliasBelongsToOneTemplate) {
  auto store = open();
  Template a;
  a.id = "a";
  a.aliases = {"shared"};
  store->upsert_template(a);
  Template b;
  b.id = "b";
  b.aliases = {"mine", "shared"};
  EXPECT_THROW(store->upsert_template(b), StoreError);
  // The failed upsert left nothing half-written.
  EXPECT_FALSE(store->template_by_id_or_alias("b"));
  EXPECT_FALSE(store->template_by_id_or_alias("mine"));
  EXPECT_EQ(store->template_by_id_or_alias("shared")->id, "a");
}

TEST_F(SqliteStoreTest, TemplateStartSettingsAndOwnerRoundTrip) {
  auto store = open();
  Template t;
  t.id = "tpl1";
  t.team_id = "team_x";
  t.start_cmd = "python3 -m http.server 3000";
  t.ready_cmd = "curl -sf localhost:3000";
  t.env = {{"B", "two words"}, {"A", "1"}};
  t.workdir = "/app";
  t.user = "user";
  store->upsert_template(t);
  auto got = store->template_by_id_or_alias("tpl1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->team_id, "team_x");
  EXPECT_EQ(got->start_cmd, t.start_cmd);
  EXPECT_EQ(got->ready_cmd, t.ready_cmd);
  EXPECT_EQ(got->env, t.env);  // order kept: later ENV steps may refer to earlier ones
  EXPECT_EQ(got->workdir, "/app");
  EXPECT_EQ(got->user, "user");
}

TEST_F(SqliteStoreTest, BuildsKeepResultLogsAndReason) {
  auto store = open();
  Template t;
  t.id = "tpl";
  store->upsert_template(t);
  TemplateBuild b;
  b.template_id = "tpl";
  b.build_id = "b1";
  b.status = BuildStatus::building;
  b.created_at = at(5);
  b.logs = {{at(6), "info", "[1/2] RUN true", "1"}, {at(7), "error", std::string("bad \xff byte"), "2"}};
  store->upsert_build(b);
  ASSERT_EQ(store->unfinished_builds().size(), 1u);
  EXPECT_EQ(store->unfinished_builds()[0].build_id, "b1");
  b.status = BuildStatus::error;
  b.reason = "step 2 failed: exit status 3";
  b.reason_step = "2";
  b.result.layers = {"/l/2", "/l/1"};
  b.result.start_cmd = "srv";
  b.result.env = {{"A", "1"}};
  b.result.cpu_count = 3;
  b.finished_at = at(9);
  store->upsert_build(b);
  auto got = store->build("tpl", "b1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, BuildStatus::error);
  EXPECT_EQ(got->reason, b.reason);
  EXPECT_EQ(got->reason_step, "2");
  EXPECT_EQ(got->result.layers, b.result.layers);
  EXPECT_EQ(got->result.start_cmd, "srv");
  EXPECT_EQ(got->result.env, b.result.env);
  EXPECT_EQ(got->result.cpu_count, 3);
  EXPECT_EQ(got->created_at, at(5));
  EXPECT_EQ(got->finished_at, at(9));
  ASSERT_EQ(got->logs.size(), 2u);
  EXPECT_EQ(got->logs[0].message, "[1/2] RUN true");
  EXPECT_EQ(got->logs[0].timestamp, at(6));
  EXPECT_EQ(got->logs[1].level, "error");
  EXPECT_EQ(got->logs[1].step, "2");
  EXPECT_NE(got->logs[1].message.find("bad "), std::string::npos);  // invalid UTF-8 replaced, kept
  EXPECT_FALSE(store->build("tpl", "b2"));
  EXPECT_TRUE(store->unfinished_builds().empty());  // an error is finished
  EXPECT_FALSE(store->build("other", "b1"));
}

TEST_F(SqliteStoreTest, TagsNameBuildsAndGoWithTheirTemplate) {
  auto store = open();
  Template t;
  t.id = "tpl";
  t.aliases = {"my-tpl"};
  t.layers = {"/l/a"};
  store->upsert_template(t);
  TemplateBuild b;
  b.template_id = "tpl";
  b.build_id = "b1";
  b.status = BuildStatus::ready;
  b.result.layers = {"/l/b", "/l/a"};
  store->upsert_build(b);
  store->set_tag({"tpl", "v1", "b1", at(1)});
  store->set_tag({"tpl", "prod", "b1", at(2)});
  store->set_tag({"tpl", "v1", "b1", at(3)});  // re-tagging moves it, no duplicate
  auto tags = store->tags("tpl");
  ASSERT_EQ(tags.size(), 2u);
  EXPECT_EQ(tags[0].tag, "prod");
  EXPECT_EQ(tags[1].tag, "v1");
  EXPECT_EQ(tags[1].build_id, "b1");
  EXPECT_TRUE(store->remove_tag("tpl", "prod"));
  EXPECT_FALSE(store->remove_tag("tpl", "prod"));
  auto in_use = store->layers_in_use();
  std::sort(in_use.begin(), in_use.end());
  EXPECT_EQ(in_use, (std::vector<std::string>{"/l/a", "/l/b"}));

  EXPECT_TRUE(store->delete_template("tpl"));
  EXPECT_FALSE(store->delete_template("tpl"));
  EXPECT_FALSE(store->template_by_id_or_alias("my-tpl"));
  EXPECT_FALSE(store->build("tpl", "b1"));
  EXPECT_TRUE(store->tags("tpl").empty());
  EXPECT_TRUE(store->layers_in_use().empty());
}

TEST_F(SqliteStoreTest, TwoConnectionsShareTheDatabase) {
  auto writer = open();
  auto reader = open();
  writer->insert_sandbox(sandbox("shared", "t", at(1)));
  EXPECT_TRUE(reader->sandbox("shared"));
}

}  // namespace
}  // namespace cove::shim
