#include "interpreter/contexts.hpp"

#include "text/uuid.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace cove::interpreter {

std::string ContextRegistry::default_cwd() {
  struct stat st {};
  if (::stat(kDefaultCwd, &st) == 0 && S_ISDIR(st.st_mode)) return kDefaultCwd;
  return "/";  // images without E2B's user home
}

ContextRegistry::ContextRegistry(net::any_io_executor executor, KernelFactory factory, std::string runtime_root,
                                 std::vector<std::string> kernel_env)
    : executor_(std::move(executor)),
      factory_(std::move(factory)),
      runtime_root_(std::move(runtime_root)),
      kernel_env_(std::move(kernel_env)) {}

net::awaitable<std::shared_ptr<Context>> ContextRegistry::create(std::string language, std::string cwd) {
  struct stat st {};
  if (cwd.empty() || cwd.front() != '/' || ::stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw ContextError("Failed to set working directory");
  }
  auto context = std::make_shared<Context>(executor_, text::random_uuid4(), language, cwd);
  std::string dir = runtime_root_ + "/" + context->id;
  if (::mkdir(dir.c_str(), 0700) != 0) throw ContextError("Failed to create context: cannot make its runtime directory");
  KernelLaunch launch{language, cwd, kernel_env_, dir};
  std::string failure;
  try {
    context->kernel = factory_(launch);
    co_await context->kernel->start();
  } catch (const std::exception& e) {
    failure = e.what();
    if (failure.empty()) failure = "unknown error";
  }
  if (!failure.empty()) {
    if (context->kernel) {
      auto kernel = std::move(context->kernel);
      co_await kernel->shutdown();
    }
    throw ContextError("Failed to create context: " + failure);
  }
  ordered_.push_back(context);
  co_return context;
}

net::awaitable<std::shared_ptr<Context>> ContextRegistry::default_for(std::string language) {
  auto& creation = default_creation_[language];
  if (!creation) creation = std::make_unique<async::FifoMutex>(executor_);
  auto guard = co_await creation->lock();
  if (auto it = defaults_.find(language); it != defaults_.end() && !it->second->removed) co_return it->second;
  auto context = co_await create(language, default_cwd());
  defaults_[language] = context;
  co_return context;
}

std::shared_ptr<Context> ContextRegistry::find(const std::string& id) const {
  if (id == "default") {
    auto it = defaults_.find("python");
    return it == defaults_.end() || it->second->removed ? nullptr : it->second;
  }
  for (const auto& c : ordered_) {
    if (c->id == id) return c;
  }
  return nullptr;
}

net::awaitable<bool> ContextRegistry::remove(const std::string& id) {
  auto it = std::find_if(ordered_.begin(), ordered_.end(), [&](const auto& c) { return c->id == id; });
  if (it == ordered_.end()) co_return false;
  auto context = *it;
  ordered_.erase(it);
  context->removed = true;
  for (auto d = defaults_.begin(); d != defaults_.end();) {
    d = d->second == context ? defaults_.erase(d) : std::next(d);
  }
  co_await context->kernel->shutdown();
  // Its log and scratch files go with it.
  std::error_code ignored;
  std::filesystem::remove_all(runtime_root_ + "/" + context->id, ignored);
  co_return true;
}

net::awaitable<void> ContextRegistry::shutdown_all() {
  auto all = std::move(ordered_);
  ordered_.clear();
  defaults_.clear();
  for (auto& c : all) {
    c->removed = true;
    co_await c->kernel->shutdown();
  }
}

}  // namespace cove::interpreter
