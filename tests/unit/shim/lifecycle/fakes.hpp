#pragma once
// In-memory Store and scripted Runtime for lifecycle tests: no database, no containers, no sleeps
// beyond the io loop's own timers.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <set>

#include "lifecycle/clock.hpp"
#include "runtime/runtime.hpp"
#include "store/store.hpp"

namespace cove::shim::testing {

class FakeStore final : public Store {
 public:
  Team ensure_team(std::string_view name) override {
    std::lock_guard lock(mu_);
    for (auto& [id, t] : teams_) {
      if (t.name == name) return t;
    }
    Team t{"team_" + std::to_string(teams_.size()), std::string(name), Clock::now()};
    teams_[t.id] = t;
    return t;
  }
  std::optional<Team> team_by_id(std::string_view id) override {
    std::lock_guard lock(mu_);
    auto it = teams_.find(std::string(id));
    if (it == teams_.end()) return std::nullopt;
    return it->second;
  }
  void add_api_key(const ApiKey& key) override {
    std::lock_guard lock(mu_);
    keys_[key.hash] = key;
  }
  std::optional<std::string> team_for_key_hash(std::string_view hash) override {
    std::lock_guard lock(mu_);
    auto it = keys_.find(std::string(hash));
    if (it == keys_.end()) return std::nullopt;
    return it->second.team_id;
  }
  void add_access_token(const AccessToken& token) override {
    std::lock_guard lock(mu_);
    tokens_[token.hash] = token;
  }
  std::optional<std::string> team_for_access_token_hash(std::string_view hash) override {
    std::lock_guard lock(mu_);
    auto it = tokens_.find(std::string(hash));
    if (it == tokens_.end()) return std::nullopt;
    return it->second.team_id;
  }
  void upsert_template(const Template& tpl) override {
    std::lock_guard lock(mu_);
    templates_[tpl.id] = tpl;
  }
  std::optional<Template> template_by_id_or_alias(std::string_view ref) override {
    std::lock_guard lock(mu_);
    for (auto& [id, t] : templates_) {
      if (id == ref || std::find(t.aliases.begin(), t.aliases.end(), ref) != t.aliases.end()) return t;
    }
    return std::nullopt;
  }
  std::vector<Template> templates() override {
    std::lock_guard lock(mu_);
    std::vector<Template> out;
    for (auto& [id, t] : templates_) out.push_back(t);
    return out;
  }
  bool delete_template(std::string_view id) override {
    std::lock_guard lock(mu_);
    return templates_.erase(std::string(id)) == 1;
  }
  // Builds and tags belong to the template service, which has its own tests on the real store.
  void upsert_build(const TemplateBuild&) override {}
  std::optional<TemplateBuild> build(std::string_view, std::string_view) override { return std::nullopt; }
  std::vector<TemplateBuild> unfinished_builds() override { return {}; }
  void set_tag(const TemplateTag&) override {}
  bool remove_tag(std::string_view, std::string_view) override { return false; }
  std::vector<TemplateTag> tags(std::string_view) override { return {}; }
  std::vector<std::string> layers_in_use() override { return {}; }
  void insert_sandbox(const SandboxRecord& rec) override {
    std::lock_guard lock(mu_);
    if (sandboxes_.count(rec.id)) throw StoreError("duplicate sandbox");
    sandboxes_[rec.id] = rec;
  }
  bool update_sandbox(const SandboxRecord& rec, uint64_t expected) override {
    std::lock_guard lock(mu_);
    auto it = sandboxes_.find(rec.id);
    if (it == sandboxes_.end() || it->second.generation != expected) return false;
    it->second = rec;
    return true;
  }
  std::optional<SandboxRecord> sandbox(std::string_view id) override {
    std::lock_guard lock(mu_);
    auto it = sandboxes_.find(std::string(id));
    if (it == sandboxes_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<SandboxRecord> live_sandboxes() override {
    std::lock_guard lock(mu_);
    std::vector<SandboxRecord> out;
    for (auto& [id, r] : sandboxes_) {
      if (r.state != SandboxState::killed) out.push_back(r);
    }
    return out;
  }
  std::vector<SandboxRecord> list_sandboxes(const SandboxQuery& q) override {
    std::lock_guard lock(mu_);
    std::vector<SandboxRecord> out;
    auto states = q.states.empty() ? std::vector<SandboxState>{SandboxState::running, SandboxState::paused} : q.states;
    for (auto& [id, r] : sandboxes_) {
      if (!q.team_id.empty() && r.team_id != q.team_id) continue;
      if (std::find(states.begin(), states.end(), r.state) == states.end()) continue;
      bool match = true;
      for (auto& [k, v] : q.metadata) {
        auto m = r.metadata.find(k);
        if (m == r.metadata.end() || m->second != v) match = false;
      }
      if (!match) continue;
      if (q.after && std::make_pair(r.started_at, r.id) >= *q.after) continue;
      out.push_back(r);
    }
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) {
      return std::make_pair(a.started_at, a.id) > std::make_pair(b.started_at, b.id);
    });
    if (out.size() > q.limit) out.resize(q.limit);
    return out;
  }
  size_t purge_killed(TimePoint) override { return 0; }
  void insert_snapshot(const Snapshot& snap) override {
    std::lock_guard lock(mu_);
    if (!snapshots_.emplace(snap.id, snap).second) throw StoreError("duplicate snapshot");
  }
  std::optional<Snapshot> snapshot(std::string_view id) override {
    std::lock_guard lock(mu_);
    auto it = snapshots_.find(std::string(id));
    if (it == snapshots_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<Snapshot> snapshots(std::string_view team_id, std::string_view sandbox_id) override {
    std::lock_guard lock(mu_);
    std::vector<Snapshot> out;
    for (auto& [id, s] : snapshots_) {
      if ((team_id.empty() || s.team_id == team_id) && (sandbox_id.empty() || s.sandbox_id == sandbox_id)) {
        out.push_back(s);
      }
    }
    return out;
  }
  bool delete_snapshot(std::string_view id) override {
    std::lock_guard lock(mu_);
    return snapshots_.erase(std::string(id)) > 0;
  }

 private:
  std::mutex mu_;
  std::map<std::string, Team> teams_;
  std::map<std::string, ApiKey> keys_;
  std::map<std::string, AccessToken> tokens_;
  std::map<std::string, Template> templates_;
  std::map<std::string, SandboxRecord> sandboxes_;
  std::map<std::string, Snapshot> snapshots_;
};

// Each connect gets one end of a socket pair; the other end answers every request with 204 and
// records the request text, like an agent that accepts /init and /health.
class FakeRuntime final : public Runtime {
 public:
  explicit FakeRuntime(net::any_io_executor ex) : ex_(std::move(ex)) {}

  void start(const SandboxSpec& spec) override {
    if (gate_) gate_->wait();
    std::lock_guard lock(mu_);
    specs.push_back(spec);
    if (fail_start) throw RuntimeError("scripted start failure");
    running.insert(spec.id);
  }
  net::awaitable<Socket> connect(const std::string& id, uint16_t port) override {
    {
      std::lock_guard lock(mu_);
      if (!running.count(id)) throw boost::system::system_error(make_error_code(boost::system::errc::no_such_process));
      if (port != 49983 && !open_ports.count(port)) {
        throw boost::system::system_error(make_error_code(boost::system::errc::connection_refused));
      }
    }
    net::local::stream_protocol::socket ours(ex_), theirs(ex_);
    net::local::connect_pair(ours, theirs);
    net::co_spawn(ex_, answer(std::move(theirs), port), net::detached);
    Socket generic(ex_, net::generic::stream_protocol(AF_UNIX, SOCK_STREAM), ours.release());
    co_return generic;
  }
  void destroy(const std::string& id) override {
    std::lock_guard lock(mu_);
    destroyed.push_back(id);
    running.erase(id);
  }
  bool recover(const std::string& id) override {
    std::lock_guard lock(mu_);
    return recoverable.count(id) > 0;
  }
  std::vector<std::string> instances() override {
    std::lock_guard lock(mu_);
    return on_host;
  }
  std::optional<SandboxStats> stats(const std::string& id) override {
    SandboxStats s;
    s.cpu_count = 2;
    s.cpu_usage_ns = cpu_ns.load();
    s.memory_used = 100 << 20;
    s.memory_total = 512 << 20;
    s.disk_used = 10 << 20;
    s.disk_total = 2048ull << 20;
    return s;
  }
  void on_exit(std::function<void(const std::string&)> cb) override { exit_callback = std::move(cb); }
  void freeze(const std::string& id) override {
    std::lock_guard lock(mu_);
    if (!running.count(id)) throw RuntimeError("not running");
    frozen.push_back(id);
  }
  void thaw(const std::string& id) override {
    std::lock_guard lock(mu_);
    if (!running.count(id)) throw RuntimeError("not running");
    thawed.push_back(id);
  }
  void checkpoint(const std::string& id, const CheckpointRequest& request) override {
    std::lock_guard lock(mu_);
    if (!running.count(id)) throw RuntimeError("not running");
    if (fail_checkpoint) throw RuntimeError("scripted checkpoint failure");
    if (busy_checkpoints > 0) {
      --busy_checkpoints;
      throw CheckpointBusyError("scripted connection from outside");
    }
    checkpointed.push_back(id);
    checkpoint_dirs.push_back(request.dir);
    if (!request.leave_running) running.erase(id);
  }
  void stop(const std::string& id) override {
    std::lock_guard lock(mu_);
    stopped.push_back(id);
    running.erase(id);
  }
  void export_disk(const std::string& id, const std::string& path) override {
    std::lock_guard lock(mu_);
    exported.emplace_back(id, path);
  }

  // Test controls.
  std::mutex mu_;
  std::vector<SandboxSpec> specs;
  std::set<std::string> running;
  std::set<std::string> recoverable;
  std::vector<std::string> on_host;
  std::vector<std::string> destroyed;
  std::vector<std::string> requests;
  std::set<uint16_t> open_ports;
  std::atomic<uint64_t> cpu_ns{0};
  bool fail_start = false;
  bool fail_checkpoint = false;
  int busy_checkpoints = 0;  // this many dumps fail as if a connection raced the quiesce
  std::vector<std::string> frozen, thawed, stopped, checkpointed, checkpoint_dirs;
  std::vector<std::pair<std::string, std::string>> exported;  // id, path
  std::shared_future<void>* gate_ = nullptr;
  std::function<void(const std::string&)> exit_callback;

 private:
  net::awaitable<void> answer(net::local::stream_protocol::socket s, uint16_t port) {
    try {
      if (port != 49983) {  // a user port: echo until closed
        char buf[256];
        for (;;) {
          size_t n = co_await s.async_read_some(net::buffer(buf), net::use_awaitable);
          co_await net::async_write(s, net::buffer(buf, n), net::use_awaitable);
        }
      }
      std::string data;
      co_await net::async_read_until(s, net::dynamic_buffer(data), "\r\n\r\n", net::use_awaitable);
      auto cl = data.find("Content-Length: ");
      size_t head_end = data.find("\r\n\r\n") + 4;
      size_t want = cl == std::string::npos ? 0 : std::stoul(data.substr(cl + 16));
      while (data.size() < head_end + want) {
        char buf[4096];
        size_t n = co_await s.async_read_some(net::buffer(buf), net::use_awaitable);
        data.append(buf, n);
      }
      {
        std::lock_guard lock(mu_);
        requests.push_back(data);
      }
      std::string reply = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
      co_await net::async_write(s, net::buffer(reply), net::use_awaitable);
    } catch (...) {
    }
  }
  net::any_io_executor ex_;
};

class FakeClock final : public WallClock {
 public:
  TimePoint now() const override { return now_.load(); }
  void advance(std::chrono::seconds s) { now_.store(now_.load() + s); }
  std::atomic<TimePoint> now_{TimePoint{std::chrono::seconds(1764500000)}};
};

class CountingIds final : public IdSource {
 public:
  std::string sandbox_id() override { return "sbx" + std::to_string(next_++); }

 private:
  int next_ = 0;
};

}  // namespace cove::shim::testing
