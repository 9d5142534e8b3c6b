#pragma once
// The agent's request pipeline: CORS → access token → Basic-auth user → REST or Connect routes.
// Transport-neutral: every listener (TCP, Unix host channel, vsock) feeds the same handler.
#include <memory>
#include <string>

#include "http/router.hpp"
#include "http/server.hpp"
#include "process/registry.hpp"
#include "rest/endpoints.hpp"
#include "rpc/connect.hpp"
#include "system/agent_state.hpp"
#include "system/metrics.hpp"
#include "system/quiesce.hpp"
#include "system/users.hpp"

namespace cove {

namespace net = boost::asio;

struct AgentOptions {
  std::string envd_version;
  std::string etc_dir = "/etc";
  bool clock_sync = false;
  std::string child_path;  // PATH for children
};

class Agent {
 public:
  Agent(net::any_io_executor executor, AgentOptions options);

  // Starts background machinery (child reaping). Call before serving.
  void start();
  net::awaitable<void> handle(http::Exchange& exchange);

  process::Registry& processes() { return processes_; }
  // What /freeze lets go of; the filesystem watchers are part of it from the start, the
  // composition root adds the host channel.
  system::Quiesce& quiesce() { return quiesce_; }

 private:
  std::optional<system::User> resolve_user(const http::Exchange& ex, rpc::Status& error) const;
  net::awaitable<void> reject_unauthenticated(http::Exchange& ex, const std::string& message);

  AgentOptions options_;
  system::Quiesce quiesce_;
  std::unique_ptr<system::Quiescent> watchers_;  // every filesystem watcher, suspended together
  system::AgentState state_;
  system::UserDatabase users_;
  system::MetricsSampler metrics_;
  process::Registry processes_;
  http::Router rest_;
  rpc::ConnectRouter rpc_;
};

}  // namespace cove
