// The Store on SQLite: one connection guarded by a mutex (the shim's write rate is a few rows per
// sandbox operation; WAL lets the CLI read while `serve` writes), prepared statements made once.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>

#include <nlohmann/json.hpp>

#include "auth/random.hpp"
#include "store/migrations.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"

namespace cove::shim {
namespace {

using sqlite::Statement;

int64_t to_ns(TimePoint t) { return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(); }
TimePoint from_ns(int64_t ns) {
  return TimePoint(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

std::string to_json(const auto& value, std::string_view what) {
  try {
    return nlohmann::json(value).dump();
  } catch (const nlohmann::json::exception&) {
    throw StoreError(std::string(what) + " is not valid UTF-8");
  }
}

template <class T>
T from_json(const std::string& text, std::string_view what) {
  try {
    return nlohmann::json::parse(text).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw StoreError("state database: stored " + std::string(what) + " is corrupt");
  }
}

// A reset on entry and on exit, so a statement that threw half-way is clean for its next user.
struct Use {
  explicit Use(Statement& s) : st(s) { st.reset(); }
  ~Use() { st.reset(); }
  Statement& st;
};

constexpr const char* kTemplateColumns =
    "id, build_id, cpu_count, memory_mb, disk_size_mb, envd_version, layers, is_public, created_at, updated_at, "
    "team_id, start_json";
constexpr const char* kBuildColumns =
    "template_id, build_id, status, result, reason, reason_step, logs, created_at, finished_at";

// How a template's sandboxes start, as one JSON value (it only ever travels whole).
nlohmann::json start_settings(const Template& t) {
  return {{"startCmd", t.start_cmd}, {"readyCmd", t.ready_cmd}, {"env", t.env}, {"workdir", t.workdir},
          {"user", t.user}};
}
void read_start_settings(const nlohmann::json& j, Template& t) {
  t.start_cmd = j.value("startCmd", "");
  t.ready_cmd = j.value("readyCmd", "");
  t.env = j.value("env", std::vector<std::pair<std::string, std::string>>{});
  t.workdir = j.value("workdir", "");
  t.user = j.value("user", "");
}

// A build's result: everything of a template that a build decides.
std::string build_result_json(const Template& t) {
  nlohmann::json j = start_settings(t);
  j["layers"] = t.layers;
  j["cpuCount"] = t.cpu_count;
  j["memoryMB"] = t.memory_mb;
  j["diskSizeMB"] = t.disk_size_mb;
  j["envdVersion"] = t.envd_version;
  try {
    return j.dump();
  } catch (const nlohmann::json::exception&) {
    throw StoreError("a template build result is not valid UTF-8");
  }
}
Template read_build_result(const std::string& text) {
  Template t;
  try {
    auto j = nlohmann::json::parse(text);
    read_start_settings(j, t);
    t.layers = j.value("layers", std::vector<std::string>{});
    t.cpu_count = j.value("cpuCount", 2);
    t.memory_mb = j.value("memoryMB", 512);
    t.disk_size_mb = j.value("diskSizeMB", 2048);
    t.envd_version = j.value("envdVersion", "");
  } catch (const nlohmann::json::exception&) {
    throw StoreError("state database: a stored template build is corrupt");
  }
  return t;
}

std::string logs_json(const std::vector<BuildLogEntry>& logs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : logs) {
    out.push_back({{"t", std::chrono::duration_cast<std::chrono::nanoseconds>(e.timestamp.time_since_epoch()).count()},
                   {"level", e.level},
                   {"message", e.message},
                   {"step", e.step}});
  }
  // Command output may be anything: invalid UTF-8 is replaced, never refused.
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
std::vector<BuildLogEntry> read_logs(const std::string& text) {
  std::vector<BuildLogEntry> out;
  try {
    for (const auto& j : nlohmann::json::parse(text)) {
      BuildLogEntry e;
      e.timestamp = TimePoint(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(j.at("t").get<int64_t>())));
      e.level = j.at("level").get<std::string>();
      e.message = j.at("message").get<std::string>();
      e.step = j.at("step").get<std::string>();
      out.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception&) {
    throw StoreError("state database: stored build logs are corrupt");
  }
  return out;
}

#define COVE_SANDBOX_COLUMNS                                                                          \
  "id, team_id, template_id, alias, state, generation, started_at, end_at, metadata, env_vars, "      \
  "cpu_count, memory_mb, disk_size_mb, envd_version, secure, allow_internet_access, auto_pause, " \
  "auto_resume, network_json, slot, auto_pause_memory, paused_as, paused_at"

constexpr const char* kSelectSandboxes = "SELECT " COVE_SANDBOX_COLUMNS " FROM sandboxes ";

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(const std::string& path) : conn_(path) {
    sqlite3_busy_timeout(conn_.get(), 5000);
    conn_.exec("PRAGMA foreign_keys = ON");
    {
      Statement wal(conn_, "PRAGMA journal_mode = WAL");
      if (!wal.step() || wal.text(0) != "wal") throw StoreError("state database: cannot enable WAL mode");
    }
    // NORMAL in WAL mode: a power cut may lose the last commits but never corrupts the file.
    conn_.exec("PRAGMA synchronous = NORMAL");
    migrate(conn_);
    prepare();
  }

  Team ensure_team(std::string_view name) override {
    std::lock_guard lock(mu_);
    for (int attempt = 0; attempt < 4; ++attempt) {
      if (auto team = team_where(*team_by_name_, name)) return *team;
      Use use(*insert_team_);
      insert_team_->bind(1, "team_" + random_lowercase_alnum(20));
      insert_team_->bind(2, name);
      insert_team_->bind(3, to_ns(Clock::now()));
      insert_team_->run();  // OR IGNORE: another process may have created it meanwhile
    }
    throw StoreError("cannot create a team");
  }

  std::optional<Team> team_by_id(std::string_view id) override {
    std::lock_guard lock(mu_);
    return team_where(*team_by_id_, id);
  }

  void add_api_key(const ApiKey& key) override {
    std::lock_guard lock(mu_);
    Use use(*insert_key_);
    insert_key_->bind(1, key.hash);
    insert_key_->bind(2, key.team_id);
    insert_key_->bind(3, key.mask);
    insert_key_->bind(4, to_ns(key.created_at));
    insert_key_->run();
  }

  std::optional<std::string> team_for_key_hash(std::string_view hash) override {
    std::lock_guard lock(mu_);
    Use use(*team_for_key_);
    team_for_key_->bind(1, hash);
    if (!team_for_key_->step()) return std::nullopt;
    return team_for_key_->text(0);
  }

  void add_access_token(const AccessToken& token) override {
    std::lock_guard lock(mu_);
    Use use(*insert_token_);
    insert_token_->bind(1, token.hash);
    insert_token_->bind(2, token.team_id);
    insert_token_->bind(3, token.mask);
    insert_token_->bind(4, to_ns(token.created_at));
    insert_token_->run();
  }

  std::optional<std::string> team_for_access_token_hash(std::string_view hash) override {
    std::lock_guard lock(mu_);
    Use use(*team_for_token_);
    team_for_token_->bind(1, hash);
    if (!team_for_token_->step()) return std::nullopt;
    return team_for_token_->text(0);
  }

  void upsert_template(const Template& tpl) override {
    std::lock_guard lock(mu_);
    sqlite::Transaction tx(conn_);
    {
      Use use(*upsert_template_);
      auto& st = *upsert_template_;
      st.bind(1, tpl.id);
      st.bind(2, tpl.build_id);
      st.bind(3, int64_t{tpl.cpu_count});
      st.bind(4, int64_t{tpl.memory_mb});
      st.bind(5, int64_t{tpl.disk_size_mb});
      st.bind(6, tpl.envd_version);
      st.bind(7, to_json(tpl.layers, "a template layer"));
      st.bind(8, int64_t{tpl.is_public});
      st.bind(9, to_ns(tpl.created_at));
      st.bind(10, to_ns(tpl.updated_at));
      st.bind(11, tpl.team_id);
      st.bind(12, start_settings(tpl).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      st.run();
    }
    {
      Use use(*delete_aliases_);
      delete_aliases_->bind(1, tpl.id);
      delete_aliases_->run();
    }
    int64_t position = 0;
    for (const auto& alias : tpl.aliases) {
      {
        Use use(*alias_owner_);
        alias_owner_->bind(1, alias);
        if (alias_owner_->step()) {
          if (alias_owner_->text(0) == tpl.id) continue;  // listed twice
          throw StoreError("template alias already belongs to another template");
        }
      }
      Use use(*insert_alias_);
      insert_alias_->bind(1, alias);
      insert_alias_->bind(2, tpl.id);
      insert_alias_->bind(3, position++);
      insert_alias_->run();
    }
    tx.commit();
  }

  std::optional<Template> template_by_id_or_alias(std::string_view id_or_alias) override {
    std::lock_guard lock(mu_);
    // An id wins over an alias of the same name.
    if (auto tpl = template_where_id(id_or_alias)) return tpl;
    std::string id;
    {
      Use use(*alias_owner_);
      alias_owner_->bind(1, id_or_alias);
      if (!alias_owner_->step()) return std::nullopt;
      id = alias_owner_->text(0);
    }
    return template_where_id(id);
  }

  std::vector<Template> templates() override {
    std::lock_guard lock(mu_);
    std::vector<Template> out;
    {
      Use use(*all_templates_);
      while (all_templates_->step()) out.push_back(read_template(*all_templates_));
    }
    for (auto& tpl : out) tpl.aliases = aliases_of(tpl.id);
    return out;
  }

  bool delete_template(std::string_view id) override {
    std::lock_guard lock(mu_);
    Use use(*delete_template_);
    delete_template_->bind(1, id);
    delete_template_->run();  // aliases, builds and tags go by ON DELETE CASCADE
    return conn_.changes() == 1;
  }

  void upsert_build(const TemplateBuild& b) override {
    std::lock_guard lock(mu_);
    Use use(*upsert_build_);
    auto& st = *upsert_build_;
    st.bind(1, b.template_id);
    st.bind(2, b.build_id);
    st.bind(3, std::string(to_string(b.status)));
    st.bind(4, build_result_json(b.result));
    st.bind(5, b.reason);
    st.bind(6, b.reason_step);
    st.bind(7, logs_json(b.logs));
    st.bind(8, to_ns(b.created_at));
    st.bind(9, to_ns(b.finished_at));
    st.run();
  }

  std::optional<TemplateBuild> build(std::string_view template_id, std::string_view build_id) override {
    std::lock_guard lock(mu_);
    Use use(*build_by_id_);
    auto& st = *build_by_id_;
    st.bind(1, template_id);
    st.bind(2, build_id);
    if (!st.step()) return std::nullopt;
    return read_build(st);
  }

  std::vector<TemplateBuild> unfinished_builds() override {
    std::lock_guard lock(mu_);
    std::vector<TemplateBuild> out;
    Use use(*unfinished_builds_);
    while (unfinished_builds_->step()) out.push_back(read_build(*unfinished_builds_));
    return out;
  }

  static TemplateBuild read_build(const Statement& st) {
    TemplateBuild b;
    b.template_id = st.text(0);
    b.build_id = st.text(1);
    auto status = parse_build_status(st.text(2));
    if (!status) throw StoreError("state database: a template build has an unknown status");
    b.status = *status;
    b.result = read_build_result(st.text(3));
    b.reason = st.text(4);
    b.reason_step = st.text(5);
    b.logs = read_logs(st.text(6));
    b.created_at = from_ns(st.integer(7));
    b.finished_at = from_ns(st.integer(8));
    return b;
  }

  void set_tag(const TemplateTag& tag) override {
    std::lock_guard lock(mu_);
    Use use(*set_tag_);
    set_tag_->bind(1, tag.template_id);
    set_tag_->bind(2, tag.tag);
    set_tag_->bind(3, tag.build_id);
    set_tag_->bind(4, to_ns(tag.created_at));
    set_tag_->run();
  }

  bool remove_tag(std::string_view template_id, std::string_view tag) override {
    std::lock_guard lock(mu_);
    Use use(*remove_tag_);
    remove_tag_->bind(1, template_id);
    remove_tag_->bind(2, tag);
    remove_tag_->run();
    return conn_.changes() == 1;
  }

  std::vector<TemplateTag> tags(std::string_view template_id) override {
    std::lock_guard lock(mu_);
    std::vector<TemplateTag> out;
    Use use(*tags_of_);
    tags_of_->bind(1, template_id);
    while (tags_of_->step()) {
      out.push_back({tags_of_->text(0), tags_of_->text(1), tags_of_->text(2), from_ns(tags_of_->integer(3))});
    }
    return out;
  }

  std::vector<std::string> layers_in_use() override {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    Use use(*layers_in_use_);
    while (layers_in_use_->step()) out.push_back(layers_in_use_->text(0));
    return out;
  }

  void insert_sandbox(const SandboxRecord& rec) override {
    std::lock_guard lock(mu_);
    Use use(*insert_sandbox_);
    bind_sandbox(*insert_sandbox_, rec);
    insert_sandbox_->run();  // the primary key refuses a duplicate id
  }

  bool update_sandbox(const SandboxRecord& rec, uint64_t expected_generation) override {
    std::lock_guard lock(mu_);
    Use use(*update_sandbox_);
    bind_sandbox(*update_sandbox_, rec);
    update_sandbox_->bind(22, static_cast<int64_t>(expected_generation));
    update_sandbox_->run();
    return conn_.changes() == 1;
  }

  std::optional<SandboxRecord> sandbox(std::string_view id) override {
    std::lock_guard lock(mu_);
    Use use(*sandbox_by_id_);
    sandbox_by_id_->bind(1, id);
    if (!sandbox_by_id_->step()) return std::nullopt;
    return read_sandbox(*sandbox_by_id_);
  }

  std::vector<SandboxRecord> live_sandboxes() override {
    std::lock_guard lock(mu_);
    std::vector<SandboxRecord> out;
    Use use(*live_sandboxes_);
    while (live_sandboxes_->step()) out.push_back(read_sandbox(*live_sandboxes_));
    return out;
  }

  std::vector<SandboxRecord> list_sandboxes(const SandboxQuery& query) override {
    std::vector<SandboxRecord> out;
    if (query.limit == 0) return out;
    nlohmann::json states = nlohmann::json::array();
    if (query.states.empty()) {
      states = {to_string(SandboxState::running), to_string(SandboxState::paused)};
    } else {
      for (auto s : query.states) states.push_back(to_string(s));
    }
    std::lock_guard lock(mu_);
    auto& st = *list_sandboxes_;
    Use use(st);
    st.bind(1, query.team_id);
    st.bind(2, states.dump());
    if (query.after) {
      st.bind(3, to_ns(query.after->first));
      st.bind(4, query.after->second);
    } else {
      st.bind_null(3);
      st.bind_null(4);
    }
    // SQL narrows by team, state and cursor in index order; metadata is matched here, so the
    // row limit only goes into SQL when there is no metadata filter.
    st.bind(5, query.metadata.empty() ? static_cast<int64_t>(std::min<size_t>(query.limit, INT64_MAX)) : int64_t{-1});
    while (out.size() < query.limit && st.step()) {
      SandboxRecord rec = read_sandbox(st);
      if (matches(rec.metadata, query.metadata)) out.push_back(std::move(rec));
    }
    return out;
  }

  size_t purge_killed(TimePoint before) override {
    std::lock_guard lock(mu_);
    Use use(*purge_);
    purge_->bind(1, to_ns(before));
    purge_->run();
    return static_cast<size_t>(conn_.changes());
  }

  void insert_snapshot(const Snapshot& snap) override {
    std::lock_guard lock(mu_);
    Use use(*insert_snapshot_);
    auto& st = *insert_snapshot_;
    st.bind(1, snap.id);
    st.bind(2, snap.team_id);
    st.bind(3, snap.sandbox_id);
    st.bind(4, to_json(snap.names, "snapshot names"));
    st.bind(5, snap.template_id);
    st.bind(6, int64_t{snap.cpu_count});
    st.bind(7, int64_t{snap.memory_mb});
    st.bind(8, int64_t{snap.disk_size_mb});
    st.bind(9, snap.envd_version);
    st.bind(10, to_json(snap.env_vars, "a snapshot environment variable"));
    st.bind(11, to_ns(snap.created_at));
    st.run();
  }

  std::optional<Snapshot> snapshot(std::string_view id) override {
    std::lock_guard lock(mu_);
    Use use(*snapshot_by_id_);
    snapshot_by_id_->bind(1, id);
    if (!snapshot_by_id_->step()) return std::nullopt;
    return read_snapshot(*snapshot_by_id_);
  }

  std::vector<Snapshot> snapshots(std::string_view team_id, std::string_view sandbox_id) override {
    std::lock_guard lock(mu_);
    std::vector<Snapshot> out;
    Use use(*list_snapshots_);
    list_snapshots_->bind(1, team_id);
    list_snapshots_->bind(2, sandbox_id);
    while (list_snapshots_->step()) out.push_back(read_snapshot(*list_snapshots_));
    return out;
  }

  bool delete_snapshot(std::string_view id) override {
    std::lock_guard lock(mu_);
    Use use(*delete_snapshot_);
    delete_snapshot_->bind(1, id);
    delete_snapshot_->run();
    return conn_.changes() > 0;
  }

 private:
  static Snapshot read_snapshot(const Statement& st) {
    Snapshot s;
    s.id = st.text(0);
    s.team_id = st.text(1);
    s.sandbox_id = st.text(2);
    s.names = from_json<std::vector<std::string>>(st.text(3), "snapshot names");
    s.template_id = st.text(4);
    s.cpu_count = static_cast<int>(st.integer(5));
    s.memory_mb = static_cast<int>(st.integer(6));
    s.disk_size_mb = static_cast<int>(st.integer(7));
    s.envd_version = st.text(8);
    s.env_vars = from_json<std::map<std::string, std::string>>(st.text(9), "snapshot environment");
    s.created_at = from_ns(st.integer(10));
    return s;
  }

  void prepare() {
    auto make = [&](const std::string& sql) { return std::make_unique<Statement>(conn_, sql.c_str()); };
    team_by_name_ = make("SELECT id, name, created_at FROM teams WHERE name = ?1");
    team_by_id_ = make("SELECT id, name, created_at FROM teams WHERE id = ?1");
    insert_team_ = make("INSERT OR IGNORE INTO teams (id, name, created_at) VALUES (?1, ?2, ?3)");
    insert_key_ = make("INSERT INTO api_keys (hash, team_id, mask, created_at) VALUES (?1, ?2, ?3, ?4)");
    team_for_key_ = make("SELECT team_id FROM api_keys WHERE hash = ?1");
    insert_token_ = make("INSERT INTO access_tokens (hash, team_id, mask, created_at) VALUES (?1, ?2, ?3, ?4)");
    team_for_token_ = make("SELECT team_id FROM access_tokens WHERE hash = ?1");
    // created_at keeps its first value: re-registering a template at every start is an update.
    upsert_template_ = make(std::string("INSERT INTO templates (") + kTemplateColumns +
                            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) "
                            "ON CONFLICT (id) DO UPDATE SET build_id = excluded.build_id, "
                            "cpu_count = excluded.cpu_count, memory_mb = excluded.memory_mb, "
                            "disk_size_mb = excluded.disk_size_mb, envd_version = excluded.envd_version, "
                            "layers = excluded.layers, is_public = excluded.is_public, "
                            "updated_at = excluded.updated_at, team_id = excluded.team_id, "
                            "start_json = excluded.start_json");
    delete_template_ = make("DELETE FROM templates WHERE id = ?1");
    upsert_build_ = make(std::string("INSERT INTO template_builds (") + kBuildColumns +
                         ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (template_id, build_id) DO UPDATE "
                         "SET status = excluded.status, result = excluded.result, reason = excluded.reason, "
                         "reason_step = excluded.reason_step, logs = excluded.logs, "
                         "finished_at = excluded.finished_at");
    build_by_id_ = make(std::string("SELECT ") + kBuildColumns +
                        " FROM template_builds WHERE template_id = ?1 AND build_id = ?2");
    unfinished_builds_ = make(std::string("SELECT ") + kBuildColumns +
                              " FROM template_builds WHERE status IN ('waiting', 'building')");
    set_tag_ = make("INSERT INTO template_tags (template_id, tag, build_id, created_at) VALUES (?1, ?2, ?3, ?4) "
                    "ON CONFLICT (template_id, tag) DO UPDATE SET build_id = excluded.build_id, "
                    "created_at = excluded.created_at");
    remove_tag_ = make("DELETE FROM template_tags WHERE template_id = ?1 AND tag = ?2");
    tags_of_ = make("SELECT template_id, tag, build_id, created_at FROM template_tags WHERE template_id = ?1 "
                    "ORDER BY created_at, tag");
    layers_in_use_ = make("SELECT value FROM templates, json_each(templates.layers) UNION "
                          "SELECT value FROM template_builds, json_each(template_builds.result, '$.layers') "
                          "WHERE template_builds.status IN ('ready', 'building', 'waiting')");
    delete_aliases_ = make("DELETE FROM template_aliases WHERE template_id = ?1");
    alias_owner_ = make("SELECT template_id FROM template_aliases WHERE alias = ?1");
    insert_alias_ = make("INSERT INTO template_aliases (alias, template_id, position) VALUES (?1, ?2, ?3)");
    aliases_of_ = make("SELECT alias FROM template_aliases WHERE template_id = ?1 ORDER BY position");
    template_by_id_ = make(std::string("SELECT ") + kTemplateColumns + " FROM templates WHERE id = ?1");
    all_templates_ = make(std::string("SELECT ") + kTemplateColumns + " FROM templates ORDER BY id");
    insert_sandbox_ = make("INSERT INTO sandboxes (" COVE_SANDBOX_COLUMNS
                           ", written_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                           "?14, ?15, ?16, ?17, ?18, ?19, ?20, ?23, ?24, ?25, ?21)");
    update_sandbox_ = make(
        "UPDATE sandboxes SET team_id = ?2, template_id = ?3, alias = ?4, state = ?5, generation = ?6, "
        "started_at = ?7, end_at = ?8, metadata = ?9, env_vars = ?10, cpu_count = ?11, memory_mb = ?12, "
        "disk_size_mb = ?13, envd_version = ?14, secure = ?15, allow_internet_access = ?16, "
        "auto_pause = ?17, auto_resume = ?18, network_json = ?19, slot = ?20, written_at = ?21, "
        "auto_pause_memory = ?23, paused_as = ?24, paused_at = ?25 "
        "WHERE id = ?1 AND generation = ?22");
    sandbox_by_id_ = make(std::string(kSelectSandboxes) + "WHERE id = ?1");
    live_sandboxes_ = make(std::string(kSelectSandboxes) + "WHERE state <> 'killed' ORDER BY started_at, id");
    list_sandboxes_ = make(std::string(kSelectSandboxes) +
                           "WHERE (?1 = '' OR team_id = ?1) AND state IN (SELECT value FROM json_each(?2)) "
                           "AND (?3 IS NULL OR started_at < ?3 OR (started_at = ?3 AND id < ?4)) "
                           "ORDER BY started_at DESC, id DESC LIMIT ?5");
    purge_ = make("DELETE FROM sandboxes WHERE state = 'killed' AND written_at < ?1");
#define COVE_SNAPSHOT_COLUMNS \
  "id, team_id, sandbox_id, names, template_id, cpu_count, memory_mb, disk_size_mb, envd_version, env_vars, created_at"
    insert_snapshot_ = make("INSERT INTO snapshots (" COVE_SNAPSHOT_COLUMNS
                            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    snapshot_by_id_ = make("SELECT " COVE_SNAPSHOT_COLUMNS " FROM snapshots WHERE id = ?1");
    list_snapshots_ = make("SELECT " COVE_SNAPSHOT_COLUMNS " FROM snapshots WHERE (?1 = '' OR team_id = ?1) "
                           "AND (?2 = '' OR sandbox_id = ?2) ORDER BY created_at, id");
    delete_snapshot_ = make("DELETE FROM snapshots WHERE id = ?1");
  }

  static std::optional<Team> team_where(Statement& st, std::string_view key) {
    Use use(st);
    st.bind(1, key);
    if (!st.step()) return std::nullopt;
    return Team{st.text(0), st.text(1), from_ns(st.integer(2))};
  }

  std::vector<std::string> aliases_of(const std::string& id) {
    std::vector<std::string> out;
    Use use(*aliases_of_);
    aliases_of_->bind(1, id);
    while (aliases_of_->step()) out.push_back(aliases_of_->text(0));
    return out;
  }

  std::optional<Template> template_where_id(std::string_view id) {
    std::optional<Template> tpl;
    {
      Use use(*template_by_id_);
      template_by_id_->bind(1, id);
      if (!template_by_id_->step()) return std::nullopt;
      tpl = read_template(*template_by_id_);
    }
    tpl->aliases = aliases_of(tpl->id);
    return tpl;
  }

  static Template read_template(const Statement& st) {
    Template t;
    t.id = st.text(0);
    t.build_id = st.text(1);
    t.cpu_count = static_cast<int>(st.integer(2));
    t.memory_mb = static_cast<int>(st.integer(3));
    t.disk_size_mb = static_cast<int>(st.integer(4));
    t.envd_version = st.text(5);
    t.layers = from_json<std::vector<std::string>>(st.text(6), "template layers");
    t.is_public = st.integer(7) != 0;
    t.created_at = from_ns(st.integer(8));
    t.updated_at = from_ns(st.integer(9));
    t.team_id = st.text(10);
    try {
      read_start_settings(nlohmann::json::parse(st.text(11)), t);
    } catch (const nlohmann::json::exception&) {
      throw StoreError("state database: stored template start settings are corrupt");
    }
    return t;
  }

  static void bind_sandbox(Statement& st, const SandboxRecord& r) {
    st.bind(1, r.id);
    st.bind(2, r.team_id);
    st.bind(3, r.template_id);
    st.bind(4, r.alias);
    st.bind(5, to_string(r.state));
    st.bind(6, static_cast<int64_t>(r.generation));
    st.bind(7, to_ns(r.started_at));
    st.bind(8, to_ns(r.end_at));
    st.bind(9, to_json(r.metadata, "sandbox metadata"));
    st.bind(10, to_json(r.env_vars, "a sandbox environment variable"));
    st.bind(11, int64_t{r.cpu_count});
    st.bind(12, int64_t{r.memory_mb});
    st.bind(13, int64_t{r.disk_size_mb});
    st.bind(14, r.envd_version);
    st.bind(15, int64_t{r.secure});
    st.bind(16, int64_t{r.allow_internet_access});
    st.bind(17, int64_t{r.auto_pause});
    st.bind(18, int64_t{r.auto_resume});
    st.bind(19, r.network_json);
    st.bind(20, r.slot);
    st.bind(21, to_ns(Clock::now()));
    st.bind(23, int64_t{r.auto_pause_memory});
    st.bind(24, to_string(r.paused_as));
    st.bind(25, to_ns(r.paused_at));
  }

  static SandboxRecord read_sandbox(const Statement& st) {
    SandboxRecord r;
    r.id = st.text(0);
    r.team_id = st.text(1);
    r.template_id = st.text(2);
    r.alias = st.text(3);
    auto state = parse_sandbox_state(st.text(4));
    if (!state) throw StoreError("state database: a sandbox has an unknown state");
    r.state = *state;
    r.generation = static_cast<uint64_t>(st.integer(5));
    r.started_at = from_ns(st.integer(6));
    r.end_at = from_ns(st.integer(7));
    r.metadata = from_json<std::map<std::string, std::string>>(st.text(8), "sandbox metadata");
    r.env_vars = from_json<std::map<std::string, std::string>>(st.text(9), "sandbox environment");
    r.cpu_count = static_cast<int>(st.integer(10));
    r.memory_mb = static_cast<int>(st.integer(11));
    r.disk_size_mb = static_cast<int>(st.integer(12));
    r.envd_version = st.text(13);
    r.secure = st.integer(14) != 0;
    r.allow_internet_access = st.integer(15) != 0;
    r.auto_pause = st.integer(16) != 0;
    r.auto_resume = st.integer(17) != 0;
    r.network_json = st.text(18);
    r.slot = st.integer(19);
    r.auto_pause_memory = st.integer(20) != 0;
    auto paused_as = parse_pause_kind(st.text(21));
    if (!paused_as) throw StoreError("state database: a sandbox has an unknown pause kind");
    r.paused_as = *paused_as;
    r.paused_at = from_ns(st.integer(22));
    return r;
  }

  static bool matches(const std::map<std::string, std::string>& have, const std::map<std::string, std::string>& want) {
    for (const auto& [k, v] : want) {
      auto it = have.find(k);
      if (it == have.end() || it->second != v) return false;
    }
    return true;
  }

  std::mutex mu_;
  sqlite::Connection conn_;
  std::unique_ptr<Statement> team_by_name_, team_by_id_, insert_team_, insert_key_, team_for_key_,
      insert_token_, team_for_token_,
      upsert_template_, delete_aliases_, alias_owner_, insert_alias_, aliases_of_, template_by_id_,
      all_templates_, delete_template_, upsert_build_, build_by_id_, unfinished_builds_, set_tag_, remove_tag_, tags_of_,
      layers_in_use_, insert_sandbox_, update_sandbox_, sandbox_by_id_, live_sandboxes_, list_sandboxes_,
      purge_, insert_snapshot_, snapshot_by_id_, list_snapshots_, delete_snapshot_;
};

}  // namespace

std::unique_ptr<Store> open_sqlite_store(const std::string& path) { return std::make_unique<SqliteStore>(path); }

}  // namespace cove::shim
