// cove-agent: Cove's in-sandbox agent, wire-compatible with E2B's envd.
// flags → options → compose (agent, listeners, splicer) → run.
#include <signal.h>
#include <sys/resource.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <charconv>
#include <cstdlib>
#include <iostream>
#include <list>
#include <optional>
#include <string>

#include "agent.hpp"
#include "interpreter/server_main.hpp"
#include "net/host_channel.hpp"
#include "net/listeners.hpp"
#include "net/splice.hpp"
#include "process/spawn.hpp"

#ifndef COVE_ENVD_PROTOCOL_VERSION
#error "COVE_ENVD_PROTOCOL_VERSION must be defined by the build"
#endif

namespace {

constexpr const char* kUsage =
    "usage: cove-agent [-port N] [-unix PATH] [-vsock-port N] [-clock-sync] [-etc DIR]\n"
    "                  [-process-limit N] [-version] [-agent-version]\n"
    "       cove-agent -code-interpreter [-port N] [-envd-port N]\n";

struct Flags {
  uint16_t port = 49983;
  std::string unix_path;
  std::optional<uint32_t> vsock_port;
  bool clock_sync = false;
  std::string etc_dir = "/etc";
  unsigned long process_limit = 0;  // RLIMIT_NPROC of every child; 0: none
  // The :49999 server mode (started by a template's start command), with its own port defaults.
  bool code_interpreter = false;
  std::optional<uint16_t> explicit_port;
  uint16_t envd_port = 49983;
};

template <typename T>
bool parse_number(const char* s, T& out) {
  std::string_view v(s);
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && ptr == v.data() + v.size();
}

// Go-style flags (`-name value` or `--name=value`), as envd takes them.
std::optional<Flags> parse_flags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    while (arg.size() > 1 && arg[0] == '-' && arg[1] == '-') arg.erase(0, 1);
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto next = [&](std::string& out) {
      if (has_value) {
        out = value;
        return true;
      }
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "-version") {
      std::cout << COVE_ENVD_PROTOCOL_VERSION << "\n";
      std::exit(0);
    } else if (arg == "-agent-version") {
      std::cout << COVE_VERSION << "\n";
      std::exit(0);
    } else if (arg == "-port") {
      if (!next(v) || !parse_number(v.c_str(), f.port)) return std::nullopt;
      f.explicit_port = f.port;
    } else if (arg == "-code-interpreter") {
      f.code_interpreter = true;
    } else if (arg == "-envd-port") {
      if (!next(v) || !parse_number(v.c_str(), f.envd_port)) return std::nullopt;
    } else if (arg == "-unix") {
      if (!next(f.unix_path)) return std::nullopt;
    } else if (arg == "-vsock-port") {
      uint32_t p = 0;
      if (!next(v) || !parse_number(v.c_str(), p)) return std::nullopt;
      f.vsock_port = p;
    } else if (arg == "-clock-sync") {
      f.clock_sync = true;
    } else if (arg == "-etc") {
      if (!next(f.etc_dir)) return std::nullopt;
    } else if (arg == "-process-limit") {
      if (!next(v) || !parse_number(v.c_str(), f.process_limit)) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  return f;
}

void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = parse_flags(argc, argv);
  if (!flags) {
    std::cerr << kUsage;
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  raise_fd_limit();
  const char* path = std::getenv("PATH");
  const std::string child_path = path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  if (flags->code_interpreter) {
    cove::interpreter::ServerOptions options;
    options.port = flags->explicit_port.value_or(49999);
    options.envd_port = flags->envd_port;
    options.child_path = child_path;
    return cove::interpreter::run_code_interpreter(options);
  }
  cove::process::set_child_process_limit(flags->process_limit);

  namespace net = boost::asio;
  net::io_context io(1);
  auto ex = io.get_executor();

  cove::Agent agent(ex, cove::AgentOptions{COVE_ENVD_PROTOCOL_VERSION, flags->etc_dir, flags->clock_sync, child_path});
  agent.start();
  cove::http::Handler handler = [&agent](cove::http::Exchange& exchange) { return agent.handle(exchange); };

  cove::netio::Splicer splicer;
  std::string error;
  if (!splicer.start(&error)) {
    std::cerr << "cove-agent: port forwarding unavailable: " << error << "\n";
  }

  std::optional<cove::netio::HostChannel> host_channel;
  std::list<cove::netio::Acceptor> acceptors;  // stable addresses for the accept loops
  try {
    acceptors.push_back(cove::netio::listen_tcp(ex, flags->port));
    std::cerr << "cove-agent: listening on port " << cove::netio::local_tcp_port(acceptors.back()) << "\n";
    net::co_spawn(ex,
                  cove::netio::accept_loop(acceptors.back(),
                                           [&](cove::netio::Socket s) {
                                             net::co_spawn(ex, cove::http::serve_connection(std::move(s), {}, handler),
                                                           net::detached);
                                           }),
                  net::detached);
    const uint16_t own_port = cove::netio::local_tcp_port(acceptors.back());
    // One host channel for the Unix socket and vsock: /freeze cuts all of its connections.
    host_channel.emplace(ex, handler, own_port, splicer);
    agent.quiesce().add(*host_channel);
    auto serve_host = [&](cove::netio::Acceptor& acceptor) {
      net::co_spawn(ex,
                    cove::netio::accept_loop(acceptor,
                                             [&](cove::netio::Socket s) {
                                               net::co_spawn(ex, host_channel->serve(std::move(s)), net::detached);
                                             }),
                    net::detached);
    };
    if (!flags->unix_path.empty()) {
      acceptors.push_back(cove::netio::listen_unix(ex, flags->unix_path));
      serve_host(acceptors.back());
    }
    if (flags->vsock_port) {
      acceptors.push_back(cove::netio::listen_vsock(ex, *flags->vsock_port));
      serve_host(acceptors.back());
    }
  } catch (const std::exception& e) {
    std::cerr << "cove-agent: " << e.what() << "\n";
    return 1;
  }

  // As PID 1, SIGTERM is ignored unless handled: stop cleanly on it.
  net::signal_set stop(io, SIGTERM, SIGINT);
  stop.async_wait([&](boost::system::error_code, int) { io.stop(); });
  io.run();
  return 0;
}
