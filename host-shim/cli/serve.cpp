#include "cli/serve.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <list>

#include "api/control_plane.hpp"
#include "cli/admin.hpp"
#include "cli/tcp_listen.hpp"
#include "cli/templates_setup.hpp"
#include "edge/sandbox_proxy.hpp"
#include "http/server.hpp"
#include "lifecycle/sandbox_manager.hpp"
#include "runtime/container/container_runtime.hpp"
#include "runtime/container/network.hpp"

namespace cove::shim {
namespace fs = std::filesystem;

namespace {
void say(const std::string& text) { std::fprintf(stderr, "cove: %s\n", text.c_str()); }

// One shim per state directory: a second would fight over the same sandboxes.
int lock_state_dir(const std::string& state_dir) {
  std::string path = state_dir + "/shim.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    throw std::runtime_error("another cove serve holds the state directory");
  }
  return fd;
}
}  // namespace

int serve(const Config& config) {
  fs::create_directories(config.state_dir);
  ::chmod(config.state_dir.c_str(), 0700);
  int lock_fd = lock_state_dir(config.state_dir);
  (void)lock_fd;  // held for the life of the process

  auto store = open_sqlite_store(config.state_dir + "/cove.db");
  auto prepared = prepare_templates(config, *store);
  TokenIssuer tokens = TokenIssuer::from_state_dir(config.state_dir);

  container::NetworkConfig network_config;
  network_config.bridge = config.bridge;
  network_config.subnet = config.subnet;
  container::HostNetwork network(network_config);
  network.ensure();

  boost::asio::io_context io(1);
  container::ContainerRuntimeOptions runtime_options;
  runtime_options.state_dir = config.state_dir;
  runtime_options.network = network_config;
  container::ContainerRuntime runtime(io.get_executor(), runtime_options, network);

  SystemWallClock clock;
  RandomIdSource ids;
  ManagerOptions options;
  options.domain = config.domain;
  options.default_timeout_s = config.default_timeout_s;
  options.max_timeout_s = config.max_timeout_s;
  options.pids_max = config.pids_max;
  options.max_sandboxes = config.max_sandboxes;
  options.extra_layers = {prepared.agent_layer};
  SandboxManager manager(io.get_executor(), *store, runtime, tokens, clock, ids, options);

  auto report = manager.reconcile();
  say("reconciled: " + std::to_string(report.recovered) + " running, " + std::to_string(report.lost) +
      " gone, " + std::to_string(report.orphans) + " orphans removed");

  api::ControlPlaneOptions api_options;
  api_options.domain = config.domain;
  auto control_plane = api::make_control_plane(manager, api_options);
  edge::ProxyOptions proxy_options;
  auto proxy = edge::make_sandbox_proxy(manager, proxy_options);
  auto admin = make_admin_handler(manager);

  std::list<netio::Acceptor> acceptors;
  auto serve_on = [&](netio::Acceptor acceptor, const http::Handler& handler, const std::string& what) {
    if (what != "admin") say(what + " listening on http://" + describe_local(acceptor));
    auto& a = acceptors.emplace_back(std::move(acceptor));
    net::co_spawn(io, netio::accept_loop(a, [&handler](Socket socket) {
                    auto ex = socket.get_executor();
                    net::co_spawn(ex, http::serve_connection(std::move(socket), std::string(), handler),
                                  net::detached);
                  }),
                  net::detached);
  };
  for (auto& address : config.api_listen) serve_on(listen_address(io.get_executor(), address), control_plane, "api");
  for (auto& address : config.sandbox_listen) serve_on(listen_address(io.get_executor(), address), proxy, "sandbox");
  serve_on(netio::listen_unix(io.get_executor(), admin_socket_path(config.state_dir)), admin, "admin");

  manager.start_background();
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    say("stopping; sandboxes keep running");
    io.stop();
  });
  say("ready");
  io.run();
  manager.shutdown();
  return 0;
}

}  // namespace cove::shim
