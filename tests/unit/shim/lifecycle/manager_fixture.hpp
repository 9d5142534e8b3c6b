#pragma once
// The SandboxManager under test: fake store, runtime and clock, and an io loop the test drives.
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include "fakes.hpp"
#include "lifecycle/sandbox_manager.hpp"

namespace cove::shim {
using namespace std::chrono_literals;
using testing::FakeClock;
using testing::FakeRuntime;
using testing::FakeStore;

class SandboxManagerTest : public ::testing::Test {
 protected:
  SandboxManagerTest() : runtime(io.get_executor()) {
    Template tpl;
    tpl.id = "base";
    tpl.aliases = {"base", "debian"};
    tpl.cpu_count = 2;
    tpl.memory_mb = 512;
    tpl.disk_size_mb = 2048;
    tpl.envd_version = "0.6.13";
    tpl.layers = {"/rootfs"};
    store.upsert_template(tpl);
    options.extra_layers = {"/agent-layer"};
    options.reaper_interval = 5ms;
    options.metrics_interval = 20ms;
    options.worker_threads = 2;
    options.max_timeout_s = 3600;
    options.domain = "cove.test";
    remake_manager();
  }
  // After changing `options`: a new manager over the same store and runtime (as after a restart).
  void remake_manager() {
    if (manager) manager->shutdown();
    manager.reset();
    manager = std::make_unique<SandboxManager>(io.get_executor(), store, runtime, TokenIssuer("seed"), clock, ids,
                                               options);
  }
  ~SandboxManagerTest() override { manager->shutdown(); }

  // Runs the io loop a little; an io_context that ran out of work stays stopped until restarted.
  void spin(std::chrono::milliseconds d = 2ms) {
    if (io.stopped()) io.restart();
    io.run_for(d);
  }
  template <typename T>
  T run(net::awaitable<T> work) {
    auto future = net::co_spawn(io, std::move(work), net::use_future);
    while (future.wait_for(0s) != std::future_status::ready) spin();
    return future.get();
  }
  void run_void(net::awaitable<void> work) {
    auto future = net::co_spawn(io, std::move(work), net::use_future);
    while (future.wait_for(0s) != std::future_status::ready) spin();
    future.get();
  }
  SandboxView create(const std::string& team = "team_a", std::map<std::string, std::string> metadata = {}) {
    CreateRequest request;
    request.timeout_s = 60;
    request.metadata = std::move(metadata);
    request.env_vars = {{"FOO", "bar"}};
    return run(manager->create(team, request));
  }
  int status_of(const std::function<void()>& fn) {
    try {
      fn();
    } catch (const LifecycleError& e) {
      return e.status();
    }
    return 0;
  }

  net::io_context io;
  FakeStore store;
  FakeRuntime runtime;
  FakeClock clock;
  testing::CountingIds ids;
  ManagerOptions options;
  std::unique_ptr<SandboxManager> manager;
};

}  // namespace cove::shim
