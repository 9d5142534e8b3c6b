#pragma once
// The loop every event-driven server stream runs (process output, directory watches): send what
// is queued, then sleep until new events, a due keepalive, the call's deadline or the client
// leaving. Keepalives go out only after `keepalive_interval` without other messages.
#include "rpc/connect.hpp"

namespace cove::rpc {

// `next(msg)` fills `msg` with the next queued message and returns false when none is queued.
// `finished()` is asked once the queue is drained: a status ends the stream, nullopt waits on.
// `keepalive(msg)` fills a keepalive message.
template <typename Response, typename Next, typename Finished, typename Keepalive>
net::awaitable<Status> run_event_stream(CallContext& ctx, ServerStream& stream, async::Event& wake,
                                        Next next, Finished finished, Keepalive keepalive) {
  const Status deadline_status{Code::deadline_exceeded, "context deadline exceeded"};
  const Status gone_status{Code::canceled, "client disconnected"};
  auto expired = [&] { return ctx.deadline && Clock::now() >= *ctx.deadline; };
  stream.wake_on_disconnect(&wake);
  auto keepalive_due = Clock::now() + ctx.keepalive_interval;
  Response msg;
  for (;;) {
    // Checked before every message: what a deadline kill produces must not outrun the deadline.
    if (expired()) co_return deadline_status;
    bool sent = false;
    while (next(msg)) {
      if (expired()) co_return deadline_status;
      if (!co_await stream.send(msg)) co_return gone_status;
      sent = true;
    }
    if (sent) keepalive_due = Clock::now() + ctx.keepalive_interval;
    if (auto status = finished()) co_return *status;
    if (stream.client_gone()) co_return gone_status;
    auto wake_at = keepalive_due;
    if (ctx.deadline && *ctx.deadline < wake_at) wake_at = *ctx.deadline;
    bool woken = co_await wake.wait_until(wake_at);
    if (!woken && Clock::now() >= keepalive_due && !expired()) {
      keepalive(msg);
      if (!co_await stream.send(msg)) co_return gone_status;
      keepalive_due = Clock::now() + ctx.keepalive_interval;
    }
  }
}

}  // namespace cove::rpc
