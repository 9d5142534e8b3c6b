#pragma once
// The :49999 HTTP surface of E2B's code interpreter (code-interpreter.md §1): thin handlers that
// validate like FastAPI does and hand over to the context registry and run_cell.
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "http/exchange.hpp"
#include "interpreter/contexts.hpp"

namespace cove::interpreter {

struct HttpApiOptions {
  uint16_t envd_port = 49983;  // the agent, for /envs (global env vars, token check)
};

class HttpApi {
 public:
  HttpApi(net::any_io_executor executor, ContextRegistry& contexts, HttpApiOptions options);
  net::awaitable<void> handle(http::Exchange& exchange);

 private:
  net::awaitable<void> health(http::Exchange& ex);
  net::awaitable<void> execute(http::Exchange& ex);
  net::awaitable<void> create_context(http::Exchange& ex);
  net::awaitable<void> list_contexts(http::Exchange& ex);
  net::awaitable<void> restart_context(http::Exchange& ex, const std::string& id);
  net::awaitable<void> remove_context(http::Exchange& ex, const std::string& id);

  net::any_io_executor executor_;
  ContextRegistry& contexts_;
  HttpApiOptions options_;
  // The last X-Access-Token the agent accepted (absent header = ""): later requests with the same
  // token skip the round trip to the agent.
  std::optional<std::string> accepted_token_;
};

}  // namespace cove::interpreter
