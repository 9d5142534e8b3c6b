#pragma once
// The sandbox-wide environment variables, read from the agent's own GET /envs with the client's
// X-Access-Token, as E2B's interpreter reads them from envd. A token the agent refuses is refused
// here too, so /execute is exactly as protected as the agent.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace cove::interpreter {

namespace net = boost::asio;

struct EnvdEnvResult {
  enum class Outcome { ok, unauthorized, unavailable } outcome = Outcome::unavailable;
  std::map<std::string, std::string> env;
};

net::awaitable<EnvdEnvResult> fetch_global_env(net::any_io_executor executor, uint16_t envd_port,
                                               std::optional<std::string> access_token);

}  // namespace cove::interpreter
