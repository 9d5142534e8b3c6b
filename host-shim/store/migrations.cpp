#include "store/migrations.hpp"

#include <array>
#include <string>

namespace cove::shim {
namespace {

// Times are integer nanoseconds since the Unix epoch (system_clock's own resolution), so a
// round trip through the database returns the same TimePoint. Maps and lists are JSON text.
constexpr std::array kMigrations{
    // 1: teams, API-key hashes, templates (aliases in their own table so they are unique), sandboxes.
    R"sql(
CREATE TABLE teams (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
);
CREATE TABLE api_keys (
  hash       TEXT PRIMARY KEY,
  team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  mask       TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX api_keys_team ON api_keys(team_id);
CREATE TABLE templates (
  id           TEXT PRIMARY KEY,
  build_id     TEXT NOT NULL,
  cpu_count    INTEGER NOT NULL,
  memory_mb    INTEGER NOT NULL,
  disk_size_mb INTEGER NOT NULL,
  envd_version TEXT NOT NULL,
  layers       TEXT NOT NULL,
  is_public    INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
);
CREATE TABLE template_aliases (
  alias       TEXT PRIMARY KEY,
  template_id TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
  position    INTEGER NOT NULL
);
CREATE INDEX template_aliases_template ON template_aliases(template_id, position);
CREATE TABLE sandboxes (
  id                    TEXT PRIMARY KEY,
  team_id               TEXT NOT NULL,
  template_id           TEXT NOT NULL,
  alias                 TEXT NOT NULL,
  state                 TEXT NOT NULL,
  generation            INTEGER NOT NULL,
  started_at            INTEGER NOT NULL,
  end_at                INTEGER NOT NULL,
  metadata              TEXT NOT NULL,
  env_vars              TEXT NOT NULL,
  cpu_count             INTEGER NOT NULL,
  memory_mb             INTEGER NOT NULL,
  disk_size_mb          INTEGER NOT NULL,
  envd_version          TEXT NOT NULL,
  secure                INTEGER NOT NULL,
  allow_internet_access INTEGER NOT NULL,
  auto_pause            INTEGER NOT NULL,
  auto_resume           INTEGER NOT NULL,
  network_json          TEXT NOT NULL,
  slot                  INTEGER NOT NULL,
  -- When the store last wrote the row (wall clock); purge_killed ages killed rows by it.
  written_at            INTEGER NOT NULL
);
CREATE INDEX sandboxes_team_started ON sandboxes(team_id, started_at DESC, id DESC);
CREATE INDEX sandboxes_state ON sandboxes(state);
)sql",
    // 2: template builds — owners and start settings on templates, builds with their logs, tags.
    R"sql(
ALTER TABLE templates ADD COLUMN team_id TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN start_json TEXT NOT NULL DEFAULT '{}';
CREATE TABLE template_builds (
  template_id TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
  build_id    TEXT NOT NULL,
  status      TEXT NOT NULL,
  result      TEXT NOT NULL,
  reason      TEXT NOT NULL,
  reason_step TEXT NOT NULL,
  logs        TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  PRIMARY KEY (template_id, build_id)
);
CREATE TABLE template_tags (
  template_id TEXT NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
  tag         TEXT NOT NULL,
  build_id    TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (template_id, tag)
);
)sql",
    // 3: team access tokens (hashes only), the CLI's credential.
    R"sql(
CREATE TABLE access_tokens (
  hash       TEXT PRIMARY KEY,
  team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  mask       TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX access_tokens_team ON access_tokens(team_id);
)sql",
    // 4: pauses (how a paused sandbox is held, since when) and snapshots.
    R"sql(
ALTER TABLE sandboxes ADD COLUMN auto_pause_memory INTEGER NOT NULL DEFAULT 1;
ALTER TABLE sandboxes ADD COLUMN paused_as TEXT NOT NULL DEFAULT '';
ALTER TABLE sandboxes ADD COLUMN paused_at INTEGER NOT NULL DEFAULT 0;
CREATE TABLE snapshots (
  id           TEXT PRIMARY KEY,
  team_id      TEXT NOT NULL,
  sandbox_id   TEXT NOT NULL,
  names        TEXT NOT NULL,
  template_id  TEXT NOT NULL,
  cpu_count    INTEGER NOT NULL,
  memory_mb    INTEGER NOT NULL,
  disk_size_mb INTEGER NOT NULL,
  envd_version TEXT NOT NULL,
  env_vars     TEXT NOT NULL,
  created_at   INTEGER NOT NULL
);
CREATE INDEX snapshots_team ON snapshots(team_id, created_at);
)sql",
};

}  // namespace

int latest_schema_version() { return static_cast<int>(kMigrations.size()); }

void migrate(sqlite::Connection& conn) {
  // IMMEDIATE: two processes opening a fresh database at once do not both migrate it.
  sqlite::Transaction tx(conn);
  int64_t version = conn.query_int("PRAGMA user_version");
  if (version > latest_schema_version()) {
    throw StoreError("the state database has schema version " + std::to_string(version) +
                     ", newer than this Cove understands (" + std::to_string(latest_schema_version()) + ")");
  }
  if (version < 0) throw StoreError("the state database has an invalid schema version");
  for (auto i = static_cast<size_t>(version); i < kMigrations.size(); ++i) {
    conn.exec(kMigrations[i]);
  }
  if (version != latest_schema_version()) {
    // PRAGMA takes no parameters; the value is our own constant.
    std::string set = "PRAGMA user_version = " + std::to_string(latest_schema_version());
    conn.exec(set.c_str());
  }
  tx.commit();
}

}  // namespace cove::shim
