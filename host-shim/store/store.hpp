#pragma once
// The durable-state seam. SQLite today (sqlite_store), PostgreSQL when several nodes share state:
// nothing outside store/ knows which. Calls are synchronous and thread-safe; errors throw
// StoreError. Only lifecycle/ and the operator CLI call it.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "store/records.hpp"

namespace cove::shim {

struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Store {
 public:
  virtual ~Store() = default;

  // Teams, API keys and access tokens.
  virtual Team ensure_team(std::string_view name) = 0;  // creates it on first use
  virtual std::optional<Team> team_by_id(std::string_view id) = 0;
  virtual void add_api_key(const ApiKey& key) = 0;
  virtual std::optional<std::string> team_for_key_hash(std::string_view hash) = 0;
  // Team access tokens (the CLI's Bearer credential), by hash like API keys.
  virtual void add_access_token(const AccessToken& token) = 0;
  virtual std::optional<std::string> team_for_access_token_hash(std::string_view hash) = 0;

  // Templates.
  virtual void upsert_template(const Template& tpl) = 0;
  virtual std::optional<Template> template_by_id_or_alias(std::string_view id_or_alias) = 0;
  virtual std::vector<Template> templates() = 0;
  // Forgets the template with its aliases, builds and tags; false if it did not exist.
  virtual bool delete_template(std::string_view id) = 0;

  // Template builds (with their logs) and tags, which name a ready build.
  virtual void upsert_build(const TemplateBuild& build) = 0;
  virtual std::optional<TemplateBuild> build(std::string_view template_id, std::string_view build_id) = 0;
  // Builds still waiting or building (at start: those a restart interrupted).
  virtual std::vector<TemplateBuild> unfinished_builds() = 0;
  virtual void set_tag(const TemplateTag& tag) = 0;
  virtual bool remove_tag(std::string_view template_id, std::string_view tag) = 0;
  virtual std::vector<TemplateTag> tags(std::string_view template_id) = 0;
  // Every layer some template or ready build still uses (what layer cleanup must keep).
  virtual std::vector<std::string> layers_in_use() = 0;

  // Sandboxes. insert fails (StoreError) on a duplicate id.
  virtual void insert_sandbox(const SandboxRecord& rec) = 0;
  // Writes `rec` only if the stored generation equals `expected_generation`; false otherwise.
  virtual bool update_sandbox(const SandboxRecord& rec, uint64_t expected_generation) = 0;
  virtual std::optional<SandboxRecord> sandbox(std::string_view id) = 0;
  // Every sandbox not yet killed (for reconciliation at start).
  virtual std::vector<SandboxRecord> live_sandboxes() = 0;
  virtual std::vector<SandboxRecord> list_sandboxes(const SandboxQuery& query) = 0;
  // Killed records older than `before` are forgotten.
  virtual size_t purge_killed(TimePoint before) = 0;

  // Snapshots. insert fails (StoreError) on a duplicate id.
  virtual void insert_snapshot(const Snapshot& snapshot) = 0;
  virtual std::optional<Snapshot> snapshot(std::string_view id) = 0;
  // A team's snapshots (every team's when team_id is empty), oldest first; `sandbox_id` filters
  // by source when not empty.
  virtual std::vector<Snapshot> snapshots(std::string_view team_id, std::string_view sandbox_id) = 0;
  virtual bool delete_snapshot(std::string_view id) = 0;
};

// Opens (creating and migrating) the SQLite database at `path` in WAL mode.
std::unique_ptr<Store> open_sqlite_store(const std::string& path);

}  // namespace cove::shim
