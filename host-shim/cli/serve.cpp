#include "cli/serve.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <list>

#include "api/control_plane.hpp"
#include "cli/admin.hpp"
#include "cli/tcp_listen.hpp"
#include "cli/templates_setup.hpp"
#include "edge/certificates.hpp"
#include "edge/edge_router.hpp"
#include "edge/host_route.hpp"
#include "edge/sandbox_proxy.hpp"
#include "edge/tls_connection.hpp"
#include "edge/tls_context.hpp"
#include "http/server.hpp"
#include "lifecycle/sandbox_manager.hpp"
#include "lifecycle/template_service.hpp"
#include "runtime/container/container_runtime.hpp"
#include "runtime/container/network.hpp"

namespace cove::shim {
namespace fs = std::filesystem;

namespace {
void say(const std::string& text) { std::fprintf(stderr, "cove: %s\n", text.c_str()); }

// One shim per state directory: a second would fight over the same sandboxes.
// Every proxied stream holds a few descriptors (client, socket pair, sandbox channel); the
// default soft limit of 1024 would cap the edge at a few hundred streams.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// The certificate the edge presents: the operator's, or one from the local CA.
edge::TlsFiles edge_certificate(const Config& config, const std::string& domain_host) {
  if (!config.tls_cert.empty()) {
    edge::TlsFiles files{config.tls_cert, config.tls_key};
    edge::check_certificate_files(files);
    return files;
  }
  auto files = edge::ensure_local_certificates(config.state_dir, domain_host);
  say("local CA: ca.pem in the state directory (what NODE_EXTRA_CA_CERTS points at)");
  return files;
}

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
  raise_descriptor_limit();
  const std::string domain_host(edge::domain_host(config.domain));
  std::shared_ptr<boost::asio::ssl::context> tls_context;
  if (!config.tls_listen.empty()) {
    tls_context = edge::make_tls_context(edge_certificate(config, domain_host), config.http2);
  }

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
  if (!config.criu_path.empty()) runtime_options.criu_path = config.criu_path;
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
  options.checkpoints_dir = config.state_dir + "/checkpoints";
  options.pause.cold_after = std::chrono::seconds(config.pause_cold_after_s);
  options.pause.retention = std::chrono::seconds(config.paused_retention_s);
  SandboxManager manager(io.get_executor(), *store, runtime, tokens, clock, ids, options);

  auto report = manager.reconcile();
  say("reconciled: " + std::to_string(report.recovered) + " recovered (running or paused), " + std::to_string(report.lost) +
      " gone, " + std::to_string(report.orphans) + " orphans removed");

  TemplateServiceOptions build_options;
  build_options.state_dir = config.state_dir;
  build_options.envd_version = prepared.envd_version;
  build_options.agent_port = options.agent_port;
  build_options.registry_ca = config.registry_ca;
  build_options.layers_dir = config.layers_dir;
  build_options.max_concurrent_builds = static_cast<size_t>(config.max_concurrent_builds);
  build_options.step_timeout_s = std::min<int64_t>(3600, config.max_timeout_s);
  TemplateService template_builds(io.get_executor(), *store, manager, tokens, build_options);

  api::ControlPlaneOptions api_options;
  api_options.domain = config.domain;
  api_options.builds = &template_builds;
  auto control_plane = api::make_control_plane(manager, api_options);
  edge::ProxyOptions proxy_options;
  auto proxy = edge::make_sandbox_proxy(manager, proxy_options);
  auto admin = make_admin_handler(manager, template_builds);
  edge::ProxyOptions edge_proxy_options;
  edge_proxy_options.domain = domain_host;
  auto edge_proxy = edge::make_sandbox_proxy(manager, edge_proxy_options);
  auto edge_router = edge::make_edge_router(control_plane, edge_proxy, domain_host);

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
  for (auto& address : config.tls_listen) {
    auto& a = acceptors.emplace_back(listen_address(io.get_executor(), address));
    say("tls listening on " + describe_local(a) + " for https://api." + config.domain + " and https://<port>-<id>." +
        config.domain);
    net::co_spawn(io, netio::accept_loop(a, [&edge_router, &tls_context](Socket socket) {
                    auto ex = socket.get_executor();
                    net::co_spawn(ex, edge::serve_tls_connection(std::move(socket), tls_context, edge_router),
                                  net::detached);
                  }),
                  net::detached);
  }

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
