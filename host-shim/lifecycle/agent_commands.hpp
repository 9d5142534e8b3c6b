#pragma once
// Commands in a sandbox through its agent, as E2B's builder runs its steps: process.Process/Start
// over the Connect protocol (JSON codec) on one agent connection, `/bin/bash -l -c <cmd>`, as the
// given user (Basic auth) in the given directory with the given environment.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cove::shim {

namespace net = boost::asio;

struct AgentCommand {
  std::string command;  // a bash command line
  std::string user = "root";
  std::string cwd;      // "" = the user's home
  std::vector<std::pair<std::string, std::string>> env;
  std::string access_token;  // the sandbox's envd token ("" = unsecured)
};

struct CommandOutcome {
  bool started = false;
  int exit_code = -1;
  std::string status;   // the agent's status string: "exit status 3", "signal: killed"
  std::string error;    // why it could not run (agent's Connect error, HTTP status), if it did not
};

// The request bytes (HTTP/1.1 head + one Connect envelope); exposed for unit tests.
std::string start_request(const AgentCommand& command);

// Feeds response body bytes in, reports output and the outcome: the Connect stream decoder.
class StartStreamDecoder {
 public:
  using OutputSink = std::function<void(bool is_stderr, std::string_view text)>;
  explicit StartStreamDecoder(OutputSink sink) : sink_(std::move(sink)) {}
  // false once the stream is complete (end-stream frame seen) or malformed.
  bool feed(std::string_view bytes);
  const CommandOutcome& outcome() const { return outcome_; }
  bool finished() const { return finished_; }

 private:
  void message(unsigned char flags, std::string_view payload);
  OutputSink sink_;
  std::string pending_;
  CommandOutcome outcome_;
  bool finished_ = false;
};

// Runs `command` to its end on `socket` (a fresh agent connection, used up by it). Output is
// passed to `sink` as it arrives.
net::awaitable<CommandOutcome> run_agent_command(net::generic::stream_protocol::socket& socket, AgentCommand command,
                                                 StartStreamDecoder::OutputSink sink);

// Starts `command` and returns once it runs; the agent keeps it running after this connection
// closes (as envd does for background commands).
net::awaitable<CommandOutcome> start_agent_command(net::generic::stream_protocol::socket& socket, AgentCommand command);

}  // namespace cove::shim
