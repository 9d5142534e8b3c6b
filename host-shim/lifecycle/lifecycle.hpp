#pragma once
// The core of the shim: every sandbox's state machine, its lifetime (endAt, the reaper), its
// metrics, and the only caller of the store and the runtime. Handlers (api/, edge/) speak to this
// class and nothing below it. Methods are coroutines on the shim's io executor; blocking runtime
// work runs on worker threads. Errors are LifecycleError.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lifecycle/errors.hpp"
#include "store/records.hpp"

namespace cove::shim {

namespace net = boost::asio;
using Socket = net::generic::stream_protocol::socket;

struct CreateRequest {
  std::string template_ref = "base";     // template id or alias
  std::optional<int64_t> timeout_s;      // lifetime from readiness; default from config
  std::map<std::string, std::string> metadata;
  std::map<std::string, std::string> env_vars;
  bool secure = true;
  bool allow_internet_access = true;
  bool auto_pause = false;
  bool auto_pause_memory = true;         // false: the timeout pauses filesystem-only
  bool auto_resume = false;
  std::string network_json = "null";     // echoed back in SandboxDetail.network
  // Template builds only (never from the API): start from these layers instead of the
  // template's, keep the writable layer in `changes_dir` (see SandboxSpec), skip the template's
  // start command.
  std::optional<std::vector<std::string>> build_layers;
  std::string changes_dir;
};

// Build sandboxes belong to this team: no API key maps to it, so no client lists or reaches them.
inline constexpr std::string_view kBuilderTeam = "builder";

// A sandbox as the API shows it: the record plus what is derived from it.
struct SandboxView {
  SandboxRecord record;
  std::string envd_access_token;         // empty when not secure
  std::string traffic_access_token;      // empty unless the network config asks for one
  std::string domain;                    // what clients use to reach it (may be empty)
};

struct ListPage {
  std::vector<SandboxView> items;
  std::optional<std::string> next_token; // opaque; set only if another page exists
};

struct ListRequest {
  std::vector<SandboxState> states;              // empty: running and paused
  std::map<std::string, std::string> metadata;   // decoded already
  std::optional<std::string> next_token;         // from a previous page; invalid → bad_request
  size_t limit = 100;
};

struct MetricSample {
  TimePoint timestamp{};
  int cpu_count = 0;
  double cpu_used_pct = 0;
  uint64_t mem_used = 0, mem_total = 0;
  uint64_t disk_used = 0, disk_total = 0;
};

// One child of a fork: the sandbox, or why it could not start (the others are unaffected).
struct ForkOutcome {
  std::optional<SandboxView> sandbox;
  int error_code = 0;  // HTTP-style, as LifecycleError
  std::string error_message;
};

// A proxied connection into a sandbox. Kill closes every live lease of that sandbox at once.
class PortLease {
 public:
  virtual ~PortLease() = default;
  virtual Socket& socket() = 0;
};

class Lifecycle {
 public:
  virtual ~Lifecycle() = default;

  // `request.template_ref` may also name one of the team's snapshots: the sandbox then starts
  // from its checkpoint (processes included) over a copy of its disk.
  virtual net::awaitable<SandboxView> create(std::string team_id, CreateRequest request) = 0;
  // Running → extends endAt to now+timeout if that is later (never shortens); returns
  // {view, resumed=false}. Paused → resumes it (memory=false: boots it again over its files,
  // discarding the memory state) with endAt = now+timeout; {view, resumed=true}. Unknown,
  // killed or another team's → not_found.
  virtual net::awaitable<std::pair<SandboxView, bool>> connect(std::string team_id, std::string id,
                                                               std::optional<int64_t> timeout_s,
                                                               bool memory) = 0;
  // Running → paused (memory=false: only its files are kept). Already paused → conflict;
  // unknown/killed → not_found.
  virtual net::awaitable<void> pause(std::string team_id, std::string id, bool memory) = 0;
  // A checkpoint of a running or paused sandbox that new sandboxes start from; the source goes on.
  virtual net::awaitable<Snapshot> create_snapshot(std::string team_id, std::string id, std::string name) = 0;
  // The team's snapshots; filters apply when not empty (`name` matches a name or the id).
  virtual net::awaitable<std::vector<Snapshot>> list_snapshots(std::string team_id, std::string sandbox_id,
                                                               std::string name) = 0;
  // false: no such snapshot of this team.
  virtual net::awaitable<bool> delete_snapshot(std::string team_id, std::string id) = 0;
  // `count` new sandboxes from one checkpoint of a running or paused sandbox.
  virtual net::awaitable<std::vector<ForkOutcome>> fork(std::string team_id, std::string id, int count,
                                                        std::optional<int64_t> timeout_s) = 0;
  virtual net::awaitable<SandboxView> get(std::string team_id, std::string id) = 0;
  virtual net::awaitable<ListPage> list(std::string team_id, ListRequest request) = 0;
  // true if it was alive and is now killed; false if unknown/already killed.
  virtual net::awaitable<bool> kill(std::string team_id, std::string id) = 0;
  // Replaces endAt with now+timeout (may shorten).
  virtual net::awaitable<void> set_timeout(std::string team_id, std::string id, int64_t timeout_s) = 0;
  // Extends endAt to now+duration if later.
  virtual net::awaitable<void> refresh(std::string team_id, std::string id, int64_t duration_s) = 0;
  virtual net::awaitable<std::vector<MetricSample>> metrics(std::string team_id, std::string id,
                                                            std::optional<TimePoint> start,
                                                            std::optional<TimePoint> end) = 0;
  // Latest sample of each of the team's running sandboxes among `ids`.
  virtual net::awaitable<std::map<std::string, MetricSample>> latest_metrics(
      std::string team_id, std::vector<std::string> ids) = 0;

  virtual std::vector<Template> templates() = 0;
  virtual std::optional<Template> template_by_alias(const std::string& alias) = 0;

  // Data plane: the team is not checked (envd and traffic tokens guard the sandbox itself).
  // nullptr = no running sandbox with this id; throws system_error(connection_refused) when the
  // sandbox runs but nothing listens on the port.
  virtual net::awaitable<std::unique_ptr<PortLease>> open_port(std::string id, uint16_t port) = 0;
  // The envd access token of a running sandbox ("" if not secure), nullopt if not running.
  virtual std::optional<std::string> envd_token(const std::string& id) = 0;
  virtual std::optional<std::string> traffic_token(const std::string& id) = 0;

  // API keys → team id (nullopt: unknown key).
  virtual std::optional<std::string> team_for_api_key(const std::string& key) = 0;
  // Access tokens (the CLI's `Authorization: Bearer`) → their team (nullopt: unknown token).
  virtual std::optional<Team> team_for_access_token(const std::string& token) = 0;
};

}  // namespace cove::shim
