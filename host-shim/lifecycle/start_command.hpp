#pragma once
// A template's start command at create: started in the background through the agent (as the
// template's user, in its workdir, with its env), then its ready command polled until it exits 0.
// The create answers only after that, so a client reaches the service at once.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/runtime.hpp"

namespace cove::shim {

struct StartCommand {
  std::string start_cmd;
  std::string ready_cmd;  // "" = ready once started
  std::string user;
  std::string workdir;
  std::vector<std::pair<std::string, std::string>> env;
  std::string access_token;
};

// Clear, client-safe reasons: the start command could not start, or readiness timed out.
struct StartCommandError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr std::chrono::milliseconds kReadyPollInterval{100};

net::awaitable<void> run_start_command(Runtime& runtime, const std::string& id, uint16_t agent_port,
                                       const StartCommand& command, std::chrono::milliseconds limit);

}  // namespace cove::shim
