#pragma once
// One /execute on one context, independent of HTTP: waits its turn on the context, applies the
// sandbox-wide and per-call env vars, streams the kernel's events as NDJSON lines (keepalive after
// 5 s of silence, end_of_execution last), interrupts the kernel when the client goes away, and
// finally undoes the per-call env vars before the next execution may start.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "async/event.hpp"
#include "interpreter/contexts.hpp"

namespace cove::interpreter {

// Where the lines go (the HTTP response, or a test's buffer).
class CellOutput {
 public:
  virtual ~CellOutput() = default;
  // `wake` is notified when the client goes away.
  virtual void watch_client(async::Event* wake) = 0;
  virtual bool client_gone() const = 0;
  // False once the client is gone.
  virtual net::awaitable<bool> write(const std::string& line) = 0;
};

struct CellRequest {
  std::string code;
  std::map<std::string, std::string> env_vars;  // per call
};

using GlobalEnvSource = std::function<net::awaitable<std::map<std::string, std::string>>()>;

inline constexpr std::chrono::seconds kKeepaliveInterval{5};

net::awaitable<void> run_cell(std::shared_ptr<Context> context, CellRequest request, GlobalEnvSource globals,
                              CellOutput& output, std::chrono::milliseconds keepalive = kKeepaliveInterval);

}  // namespace cove::interpreter
