#pragma once
// The host channel's handshake, Firecracker hybrid-vsock style: a host connection may open with
// `CONNECT <port>\n`; the agent answers `OK <n>\n` and then serves its own HTTP (port == the
// agent's) or splices the connection to 127.0.0.1:<port> / [::1]:<port> inside the sandbox.
// A connection that opens with anything else is served as HTTP directly.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "async/event.hpp"
#include "http/server.hpp"
#include "net/listeners.hpp"
#include "net/splice.hpp"
#include "system/quiesce.hpp"

namespace cove::netio {

enum class HandshakeParse { http, connect, need_more, invalid };

// Classifies the first bytes of a host-channel connection. For `connect`, `port` is set and
// `consumed` is the length of the handshake line.
HandshakeParse parse_handshake(std::string_view bytes, uint16_t& port, size_t& consumed);

// Serves the host channel's connections and keeps track of them: CRIU cannot dump a connected
// Unix socket whose peer (the host) is outside the checkpointed tree — not even one shut down
// but not yet closed — so before a checkpoint every connection is cut and its descriptor closed:
// keep-alive and streaming HTTP ones, and the spliced port-forwards (the splicer stops, which
// also lets go of its io_uring). Connections accepted afterwards are served normally.
class HostChannel : public system::Quiescent {
 public:
  // How long let_go waits for the cut connections' descriptors to close by default.
  static constexpr std::chrono::milliseconds kCloseGrace{2000};

  HostChannel(net::any_io_executor executor, http::Handler handler, uint16_t own_port, Splicer& splicer,
              std::chrono::milliseconds close_grace = kCloseGrace);

  net::awaitable<void> serve(Socket socket);
  // Connections being served (spliced ones are the splicer's).
  size_t open_connections() const { return tracking_->open.size(); }

  // Shuts down every connection but `request_fd` (and any other carrying /freeze), stops the
  // splicer, then waits until the shut-down connections are closed: "" or how many were not
  // within the close grace.
  net::awaitable<std::string> let_go(int request_fd) override;
  // Starts the splicer again if it was running.
  void take_back() override;

 private:
  net::awaitable<void> serve_tracked(Socket socket);

  http::Handler handler_;
  uint16_t own_port_;
  Splicer& splicer_;
  std::chrono::milliseconds close_grace_;
  struct Connection {
    unsigned long id = 0;
    bool carries_freeze = false;  // kept open until its response is written
  };
  // Shared with the connections' coroutines, which may outlive the channel at exit.
  struct Tracking {
    explicit Tracking(net::any_io_executor executor) : closed(std::move(executor)) {}
    std::unordered_map<int, Connection> open;  // by descriptor
    unsigned long next_id = 0;
    async::Event closed;
  };
  std::shared_ptr<Tracking> tracking_;
  bool restart_splicer_ = false;
};

}  // namespace cove::netio
