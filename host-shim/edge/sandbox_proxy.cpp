#include "edge/sandbox_proxy.hpp"

#include <boost/system/system_error.hpp>

#include <array>
#include <system_error>

#include "edge/cors.hpp"
#include "edge/host_route.hpp"
#include "edge/internal_routes.hpp"
#include "edge/proxy_errors.hpp"
#include "edge/traffic_access.hpp"
#include "edge/upgrade_tunnel.hpp"

namespace cove::shim::edge {
namespace {
namespace net = boost::asio;

// After an answer of our own: a small unread request body is read and dropped so the connection
// can carry the next request (Go's server does the same up to 256 KiB); a larger one, or one the
// client holds back for 100-continue, ends the connection instead.
net::awaitable<void> discard_body(http::Exchange& exchange) {
  constexpr size_t kDrainLimit = 256 * 1024;
  if (exchange.body_done()) co_return;
  if (exchange.continue_pending()) {
    exchange.close_after();
    co_return;
  }
  std::array<char, 16384> buf;
  size_t total = 0;
  try {
    while (total <= kDrainLimit) {
      size_t n = co_await exchange.read_body_some(buf.data(), buf.size());
      if (n == 0) co_return;
      total += n;
    }
  } catch (const std::exception&) {
    // The client broke off; the connection ends either way.
  }
  exchange.close_after();
}

net::awaitable<void> answer_text(http::Exchange& exchange, unsigned status, std::string_view text) {
  // As Go's http.Error.
  exchange.response_headers().set("X-Content-Type-Options", "nosniff");
  std::string body = std::string(text) + "\n";
  if (exchange.continue_pending()) exchange.close_after();
  co_await exchange.respond(status, kTextContentType, std::move(body));
  co_await discard_body(exchange);
}

net::awaitable<void> answer_json(http::Exchange& exchange, unsigned status, std::string body) {
  if (exchange.continue_pending()) exchange.close_after();
  co_await exchange.respond(status, kJsonContentType, std::move(body));
  co_await discard_body(exchange);
}

std::optional<std::string_view> header_if_present(const http::Exchange& exchange, std::string_view name) {
  if (!exchange.has_header(name)) return std::nullopt;
  return exchange.header(name);
}

// What open_port said, without exceptions crossing a co_await in a handler.
enum class Dial { ok, not_found, port_closed, transitioning };

// `options` by value (shared): the coroutine frame holds it, not the handler object.
net::awaitable<void> serve(Lifecycle& lifecycle, std::shared_ptr<const ProxyOptions> shared_options,
                           http::Exchange& exchange) {
  const ProxyOptions& options = *shared_options;
  const SandboxRoute route = route_request(exchange.header("Host"), exchange.header("E2b-Sandbox-Id"),
                                           exchange.header("E2b-Sandbox-Port"), options.domain);
  if (!route.ok()) {
    co_await answer_text(exchange, 400, route_error_text(route.error));
    co_return;
  }
  const std::string& id = route.sandbox_id;

  if (route.port == kEnvdPort) {
    auto path = request_path(exchange.target());
    if (!path) {
      // What Go's server answers for a target it cannot parse.
      exchange.close_after();
      co_await exchange.respond(400, kTextContentType, "400 Bad Request");
      co_return;
    }
    if (is_envd_internal_path(*path)) {
      co_await answer_json(exchange, 404, internal_route_body(*path));
      co_return;
    }
  }

  switch (check_traffic_access(route.port, lifecycle.traffic_token(id),
                               header_if_present(exchange, kTrafficTokenHeader))) {
    case TrafficAccess::allowed: break;
    case TrafficAccess::token_missing:
      co_await answer_json(exchange, 403, traffic_token_missing_body(id));
      co_return;
    case TrafficAccess::token_invalid:
      co_await answer_json(exchange, 403, traffic_token_invalid_body(id));
      co_return;
  }


  std::unique_ptr<PortLease> lease;
  Dial dial = Dial::ok;
  try {
    lease = co_await lifecycle.open_port(id, route.port);
    if (!lease) dial = Dial::not_found;
  } catch (const boost::system::system_error&) {
    dial = Dial::port_closed;  // connection refused, or any other dial failure (as E2B's proxy)
  } catch (const std::system_error&) {
    dial = Dial::port_closed;
  } catch (const LifecycleError& e) {
    if (e.code == LifecycleErrc::not_found) {
      dial = Dial::not_found;
    } else if (e.code == LifecycleErrc::conflict) {
      dial = Dial::transitioning;
    } else {
      throw;
    }
  }
  switch (dial) {
    case Dial::ok: break;
    case Dial::not_found:
      co_await answer_json(exchange, 502, sandbox_not_found_body(id));
      co_return;
    case Dial::port_closed:
      co_await answer_json(exchange, 502, port_closed_body(id, route.port));
      co_return;
    case Dial::transitioning:
      co_await answer_json(exchange, 409, still_transitioning_body(id));
      co_return;
  }

  RelayOutcome outcome = RelayOutcome::completed;
  if (wants_upgrade(exchange)) {
    // (An Upgrade without `Connection: upgrade`, or over HTTP/1.0, is relayed as a plain request
    // with the header dropped, as Go's reverse proxy does.)
    outcome = co_await relay_upgrade(exchange, lease->socket());
  } else if (route.port != kEnvdPort && is_cors_preflight(exchange)) {
    outcome = co_await relay_preflight(exchange, lease->socket());
  } else {
    // envd grants CORS itself; for other services the edge's preflight grant must hold.
    std::string cors_origin;
    if (route.port != kEnvdPort && exchange.has_header("Origin")) cors_origin = std::string(exchange.header("Origin"));
    outcome = co_await relay_exchange(exchange, lease->socket(), options.relay, std::move(cors_origin));
  }
  lease.reset();
  if (outcome == RelayOutcome::upstream_failed_before_head) {
    // Killed between the dial and the answer, or the server in the sandbox closed on us.
    if (!lifecycle.envd_token(id)) {
      co_await answer_json(exchange, 502, sandbox_not_found_body(id));
    } else {
      co_await answer_json(exchange, 502, port_closed_body(id, route.port));
    }
  }
}
}  // namespace

http::Handler make_sandbox_proxy(Lifecycle& lifecycle, ProxyOptions options) {
  auto shared = std::make_shared<const ProxyOptions>(std::move(options));
  return [&lifecycle, shared](http::Exchange& exchange) { return serve(lifecycle, shared, exchange); };
}

}  // namespace cove::shim::edge
