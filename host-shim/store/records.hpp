#pragma once
// What the shim keeps durably: teams, API-key hashes, templates and sandboxes. Plain values; the
// Store interface moves them in and out of a database, the lifecycle owns their meaning.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cove::shim {

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

// creating → running → (pausing → paused → resuming →) running … → killing → killed.
enum class SandboxState { creating, running, pausing, paused, resuming, killing, killed };
std::string_view to_string(SandboxState state);
std::optional<SandboxState> parse_sandbox_state(std::string_view text);

// How a paused sandbox is held. warm: frozen in place, memory resident (fast, lost with the host);
// cold: its processes and memory checkpointed to disk, nothing running (survives a reboot);
// filesystem: only its disk kept, processes gone for good (a resume boots it again).
enum class PauseKind { none, warm, cold, filesystem };
std::string_view to_string(PauseKind kind);
std::optional<PauseKind> parse_pause_kind(std::string_view text);

struct Team {
  std::string id;    // "team_" + 20 [a-z0-9]
  std::string name;  // unique
  TimePoint created_at{};
};

struct ApiKey {
  std::string hash;     // hex SHA-256 of the whole key; the key itself is never stored
  std::string team_id;
  std::string mask;     // "e2b_1234…cdef": enough to recognise a key in listings
  TimePoint created_at{};
};

struct AccessToken {
  std::string hash;     // hex SHA-256 of the whole token; the token itself is never stored
  std::string team_id;
  std::string mask;     // "sk_e2b_1234…cdef"
  TimePoint created_at{};
};

// A template as sandboxes start it: the stack of layers of its latest ready build plus how its
// start command runs. Built-in templates have no team and are public.
struct Template {
  std::string id;                   // "base"
  std::vector<std::string> aliases; // names that resolve to it ("base")
  std::string team_id;              // owner; empty for built-in templates
  std::string build_id;             // the build sandboxes start from (empty: never built)
  int cpu_count = 2;
  int memory_mb = 512;
  int disk_size_mb = 2048;
  std::string envd_version;         // what `cove-agent -version` printed when it was registered
  std::vector<std::string> layers;  // read-only root filesystem layers, uppermost first (host dirs)
  std::string start_cmd;            // run in the background at create ("" = none)
  std::string ready_cmd;            // create answers once it exits 0 ("" = at once)
  std::vector<std::pair<std::string, std::string>> env;  // ENV steps, in order
  std::string workdir;              // default working directory ("" = the user's home)
  std::string user;                 // default user ("" = "user")
  bool is_public = false;
  TimePoint created_at{};
  TimePoint updated_at{};
};

enum class BuildStatus { waiting, building, ready, error };
std::string_view to_string(BuildStatus status);
std::optional<BuildStatus> parse_build_status(std::string_view text);

struct BuildLogEntry {
  TimePoint timestamp{};
  std::string level;                // debug | info | warn | error
  std::string message;
  std::string step;                 // "base", "<index>", "finalize" or ""
};

// One build of a template. Once ready, `result` is what the template (or a tag) starts.
struct TemplateBuild {
  std::string template_id;
  std::string build_id;
  BuildStatus status = BuildStatus::waiting;
  Template result;                  // layers and start settings (meaningful when ready)
  std::string reason;               // why it failed
  std::string reason_step;
  std::vector<BuildLogEntry> logs;
  TimePoint created_at{};
  TimePoint finished_at{};
};

struct TemplateTag {
  std::string template_id;
  std::string tag;
  std::string build_id;
  TimePoint created_at{};
};

struct SandboxRecord {
  std::string id;                   // 20 [a-z0-9]
  std::string team_id;
  std::string template_id;
  std::string alias;                // the name the client asked for, if it was an alias
  SandboxState state = SandboxState::creating;
  // Bumped by every state change; an operation that started at generation g may only commit
  // while the record is still at g (fencing against kills and timeouts racing with it).
  uint64_t generation = 0;
  TimePoint started_at{};           // when it became ready (creation time while creating)
  TimePoint end_at{};               // the reaper kills it at this time
  std::map<std::string, std::string> metadata;
  std::map<std::string, std::string> env_vars;
  int cpu_count = 0;
  int memory_mb = 0;
  int disk_size_mb = 0;
  std::string envd_version;
  bool secure = true;
  bool allow_internet_access = true;
  bool auto_pause = false;
  bool auto_resume = false;
  std::string network_json = "null";  // the create request's `network` object, echoed back
  int64_t slot = -1;                  // per-node index: uid range, network address, names
  bool auto_pause_memory = true;      // false: the timeout pauses filesystem-only
  PauseKind paused_as = PauseKind::none;  // meaningful while pausing, paused or resuming
  TimePoint paused_at{};              // retention counts from here
};

// A checkpoint of a sandbox's memory and disk that new sandboxes start from (its id is the
// templateID clients create with). What a child inherits of the source is kept here; the images
// live with the lifecycle's checkpoints, under the snapshot's id.
struct Snapshot {
  std::string id;
  std::string team_id;
  std::string sandbox_id;              // the source
  std::vector<std::string> names;      // as clients name it ("name:default"); may be empty
  std::string template_id;             // the source's template (its layers are the child's)
  int cpu_count = 0;
  int memory_mb = 0;
  int disk_size_mb = 0;
  std::string envd_version;
  std::map<std::string, std::string> env_vars;
  TimePoint created_at{};
};

// Page through a team's sandboxes, newest first (started_at desc, then id desc).
struct SandboxQuery {
  std::string team_id;                        // empty: every team (operator listings)
  std::vector<SandboxState> states;           // empty: running and paused
  std::map<std::string, std::string> metadata;  // all must match exactly
  std::optional<std::pair<TimePoint, std::string>> after;  // cursor: strictly after this (started_at, id)
  size_t limit = 100;
};

}  // namespace cove::shim
