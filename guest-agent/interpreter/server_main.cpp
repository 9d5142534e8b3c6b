#include "interpreter/server_main.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <filesystem>
#include <iostream>
#include <list>

#include "http/server.hpp"
#include "interpreter/contexts.hpp"
#include "interpreter/http_api.hpp"
#include "interpreter/kernel_factory.hpp"
#include "interpreter/python_profile.hpp"
#include "net/listeners.hpp"
#include "process/registry.hpp"

namespace cove::interpreter {
namespace {

namespace fs = std::filesystem;

// E2B starts these two at startup; others start on first use.
constexpr const char* kStartupLanguages[] = {"python", "javascript"};

// A fresh private runtime dir: connection files there hold the kernels' signing keys.
void prepare_runtime_dir(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  if (::chmod(dir.c_str(), 0700) != 0) throw std::runtime_error("cannot restrict the runtime directory");
}

std::vector<std::string> kernel_environment(const ServerOptions& options, const std::string& ipython_dir) {
  return {
      "PATH=" + options.child_path,
      "HOME=/root",
      "USER=root",
      "SHELL=/bin/bash",
      "LANG=C.UTF-8",
      "TERM=xterm-256color",
      "IPYTHONDIR=" + ipython_dir,
      "MPLCONFIGDIR=" + options.runtime_dir + "/matplotlib",
      "PYTHONUNBUFFERED=1",
  };
}

}  // namespace

int run_code_interpreter(const ServerOptions& options) {
  net::io_context io(1);
  auto ex = io.get_executor();
  process::Registry processes(ex);
  processes.start_reaper();

  std::string ipython_dir;
  try {
    prepare_runtime_dir(options.runtime_dir);
    fs::create_directories(options.runtime_dir + "/contexts");
    fs::create_directories(options.runtime_dir + "/matplotlib");
    ipython_dir = write_python_profile(options.runtime_dir);
  } catch (const std::exception& e) {
    std::cerr << "cove-agent: code interpreter: " << e.what() << "\n";
    return 1;
  }

  KernelServices services{ex, &processes};
  ContextRegistry contexts(
      ex, [services](KernelLaunch launch) { return make_kernel(services, std::move(launch)); },
      options.runtime_dir + "/contexts", kernel_environment(options, ipython_dir));
  HttpApi api(ex, contexts, HttpApiOptions{options.envd_port});
  http::Handler handler = [&api](http::Exchange& exchange) { return api.handle(exchange); };

  std::list<netio::Acceptor> acceptors;
  net::co_spawn(
      ex,
      [&]() -> net::awaitable<void> {
        // Listening only once the startup contexts exist, so /health answering means ready.
        for (const char* language : kStartupLanguages) {
          try {
            std::string name = language;
            co_await contexts.default_for(name);
          } catch (const std::exception& e) {
            std::cerr << "cove-agent: code interpreter: " << language << ": " << e.what() << "\n";
          }
        }
        try {
          acceptors.push_back(netio::listen_tcp(ex, options.port));
        } catch (const std::exception& e) {
          std::cerr << "cove-agent: code interpreter: " << e.what() << "\n";
          io.stop();
          co_return;
        }
        std::cerr << "cove-agent: code interpreter listening on port " << options.port << "\n";
        std::function<void(netio::Socket)> on_connection = [&](netio::Socket s) {
          net::co_spawn(ex, http::serve_connection(std::move(s), {}, handler), net::detached);
        };
        co_await netio::accept_loop(acceptors.back(), on_connection);
      },
      net::detached);

  net::signal_set stop(io, SIGTERM, SIGINT);
  stop.async_wait([&](boost::system::error_code, int) {
    net::co_spawn(
        ex,
        [&]() -> net::awaitable<void> {
          co_await contexts.shutdown_all();
          io.stop();
        },
        net::detached);
  });
  io.run();
  return 0;
}

}  // namespace cove::interpreter
