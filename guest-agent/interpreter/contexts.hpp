#pragma once
// The interpreter's contexts: one kernel each, kept in creation order (clients take the last one
// listed as the one just made), with a default context per language created on first use.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "async/fifo_mutex.hpp"
#include "interpreter/kernel.hpp"

namespace cove::interpreter {

struct Context {
  Context(net::any_io_executor executor, std::string id, std::string language, std::string cwd)
      : id(std::move(id)), language(std::move(language)), cwd(std::move(cwd)), lock(executor) {}

  const std::string id;
  const std::string language;
  const std::string cwd;
  std::unique_ptr<Kernel> kernel;
  async::FifoMutex lock;        // one execution at a time, in arrival order
  bool globals_applied = false;  // the sandbox-wide env vars were set in this kernel's state
  bool removed = false;
};

// Why a context could not be made, worded for the client (E2B's 500 bodies).
struct ContextError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ContextRegistry {
 public:
  using KernelFactory = std::function<std::unique_ptr<Kernel>(KernelLaunch)>;

  // `runtime_root`: one private subdirectory per context goes there. `kernel_env`: the process
  // environment every kernel starts with.
  ContextRegistry(net::any_io_executor executor, KernelFactory factory, std::string runtime_root,
                  std::vector<std::string> kernel_env);

  // Starts a kernel for `language` (normalized) in `cwd`. Throws ContextError.
  net::awaitable<std::shared_ptr<Context>> create(std::string language, std::string cwd);

  // The language's default context, created on first use (one creation at a time per language).
  net::awaitable<std::shared_ptr<Context>> default_for(std::string language);

  // By id; "default" names the default python context, as in E2B.
  std::shared_ptr<Context> find(const std::string& id) const;
  std::vector<std::shared_ptr<Context>> list() const { return ordered_; }

  // Stops the kernel and forgets the context (a deleted default is recreated on next use).
  net::awaitable<bool> remove(const std::string& id);
  net::awaitable<void> shutdown_all();

  static constexpr const char* kDefaultCwd = "/home/user";
  // kDefaultCwd, or "/" where the image has no such directory.
  static std::string default_cwd();

 private:
  net::any_io_executor executor_;
  KernelFactory factory_;
  std::string runtime_root_;
  std::vector<std::string> kernel_env_;
  std::vector<std::shared_ptr<Context>> ordered_;
  std::map<std::string, std::shared_ptr<Context>> defaults_;  // language → context
  std::map<std::string, std::unique_ptr<async::FifoMutex>> default_creation_;
};

}  // namespace cove::interpreter
