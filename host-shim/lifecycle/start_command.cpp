#include "lifecycle/start_command.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "lifecycle/agent_commands.hpp"

namespace cove::shim {

net::awaitable<void> run_start_command(Runtime& runtime, const std::string& id, uint16_t agent_port,
                                       const StartCommand& command, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  AgentCommand start{command.start_cmd, command.user, command.workdir, command.env, command.access_token};
  {
    Socket socket = co_await runtime.connect(id, agent_port);
    CommandOutcome started = co_await start_agent_command(socket, start);
    if (!started.started) throw StartCommandError("the start command did not start (" + started.error + ")");
  }  // closing the stream leaves the command running, as envd does
  if (command.ready_cmd.empty()) co_return;
  AgentCommand ready{command.ready_cmd, command.user, command.workdir, command.env, command.access_token};
  net::steady_timer timer(co_await net::this_coro::executor);
  StartStreamDecoder::OutputSink discard;  // named: GCC 12 and temporaries in co_await operands
  for (;;) {
    Socket socket = co_await runtime.connect(id, agent_port);
    CommandOutcome outcome = co_await run_agent_command(socket, ready, discard);
    if (outcome.error.empty() && outcome.exit_code == 0) co_return;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw StartCommandError("the template's ready command did not succeed within " +
                              std::to_string(limit.count() / 1000) + " s");
    }
    timer.expires_after(kReadyPollInterval);
    co_await timer.async_wait(net::use_awaitable);
  }
}

}  // namespace cove::shim
