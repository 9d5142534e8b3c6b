#include "lifecycle/agent_commands.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <limits>

#include "text/base64.hpp"

namespace cove::shim {
namespace {
namespace bhttp = boost::beast::http;
using Socket = net::generic::stream_protocol::socket;

constexpr unsigned char kEndStream = 0x02;
constexpr size_t kMaxMessage = 16 << 20;  // the agent sends output in pieces far below this

// Reads the Start stream until `done(decoder)` says so or the stream ends.
net::awaitable<CommandOutcome> converse(Socket& socket, const AgentCommand& command, StartStreamDecoder& decoder,
                                        bool stop_once_started) {
  std::string request = start_request(command);
  co_await net::async_write(socket, net::buffer(request), net::use_awaitable);
  boost::beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  co_await bhttp::async_read_header(socket, buffer, parser, net::use_awaitable);
  CommandOutcome failed;
  const unsigned status = parser.get().result_int();
  std::array<char, 64 * 1024> piece;
  std::string error_body;
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    boost::system::error_code ec;
    auto token = net::redirect_error(net::use_awaitable, ec);
    // read_some: a running command's events arrive a few bytes at a time; a full read would wait
    // for 64 KiB of them.
    co_await bhttp::async_read_some(socket, buffer, parser, token);
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) break;
    std::string_view got(piece.data(), piece.size() - parser.get().body().size);
    if (status != 200) {
      if (error_body.size() < 4096) error_body.append(got.substr(0, 4096 - error_body.size()));
      continue;
    }
    if (!decoder.feed(got)) break;
    if (stop_once_started && decoder.outcome().started) break;
  }
  if (status != 200) {
    // Connect unary-style errors on a stream come as JSON {code, message}.
    failed.error = "the agent answered " + std::to_string(status);
    try {
      auto j = nlohmann::json::parse(error_body);
      if (j.contains("message")) failed.error += ": " + j["message"].get<std::string>();
    } catch (const nlohmann::json::exception&) {
    }
    co_return failed;
  }
  CommandOutcome outcome = decoder.outcome();
  if (!stop_once_started && !decoder.finished() && outcome.error.empty()) {
    outcome.error = "the agent's stream ended early";
  }
  if (stop_once_started && !outcome.started && outcome.error.empty()) outcome.error = "the command did not start";
  co_return outcome;
}

}  // namespace

std::string start_request(const AgentCommand& command) {
  nlohmann::json envs = nlohmann::json::object();
  for (const auto& [k, v] : command.env) envs[k] = v;
  nlohmann::json process = {{"cmd", "/bin/bash"}, {"args", {"-l", "-c", command.command}}, {"envs", envs}};
  if (!command.cwd.empty()) process["cwd"] = command.cwd;
  std::string payload = nlohmann::json{{"process", process}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string envelope(5, '\0');
  uint32_t n = static_cast<uint32_t>(payload.size());
  envelope[1] = static_cast<char>(n >> 24);
  envelope[2] = static_cast<char>(n >> 16);
  envelope[3] = static_cast<char>(n >> 8);
  envelope[4] = static_cast<char>(n);
  envelope += payload;
  std::string head =
      "POST /process.Process/Start HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
      "Content-Type: application/connect+json\r\nConnect-Protocol-Version: 1\r\n"
      "Authorization: Basic " + text::base64_encode(command.user + ":") + "\r\n";
  if (!command.access_token.empty()) head += "X-Access-Token: " + command.access_token + "\r\n";
  head += "Content-Length: " + std::to_string(envelope.size()) + "\r\n\r\n";
  return head + envelope;
}

bool StartStreamDecoder::feed(std::string_view bytes) {
  if (finished_) return false;
  pending_.append(bytes);
  size_t at = 0;
  while (pending_.size() - at >= 5) {
    auto b = reinterpret_cast<const unsigned char*>(pending_.data() + at);
    size_t length = (size_t{b[1]} << 24) | (size_t{b[2]} << 16) | (size_t{b[3]} << 8) | b[4];
    if (length > kMaxMessage) {
      outcome_.error = "the agent sent an oversized message";
      finished_ = true;
      return false;
    }
    if (pending_.size() - at - 5 < length) break;
    message(b[0], std::string_view(pending_).substr(at + 5, length));
    at += 5 + length;
    if (finished_) break;
  }
  pending_.erase(0, at);
  return !finished_;
}

void StartStreamDecoder::message(unsigned char flags, std::string_view payload) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(payload);
  } catch (const nlohmann::json::exception&) {
    outcome_.error = "the agent sent malformed JSON";
    finished_ = true;
    return;
  }
  if (flags & kEndStream) {
    if (j.contains("error") && j["error"].is_object()) {
      outcome_.error = j["error"].value("message", j["error"].value("code", std::string("unknown error")));
    }
    finished_ = true;
    return;
  }
  if (!j.contains("event") || !j["event"].is_object()) return;
  const auto& event = j["event"];
  if (event.contains("start")) outcome_.started = true;
  if (event.contains("data") && event["data"].is_object()) {
    for (const char* stream : {"stdout", "stderr", "pty"}) {
      if (!event["data"].contains(stream) || !event["data"][stream].is_string()) continue;
      auto decoded = text::base64_decode(event["data"][stream].get<std::string>());
      if (decoded && sink_) sink_(std::string_view(stream) == "stderr", *decoded);
    }
  }
  if (event.contains("end") && event["end"].is_object()) {
    const auto& end = event["end"];
    outcome_.exit_code = end.value("exitCode", 0);  // proto3 JSON leaves 0 out
    outcome_.status = end.value("status", std::string());
    if (end.contains("error") && end["error"].is_string() && outcome_.status.empty()) {
      outcome_.status = end["error"].get<std::string>();
    }
  }
}

net::awaitable<CommandOutcome> run_agent_command(Socket& socket, AgentCommand command, StartStreamDecoder::OutputSink sink) {
  StartStreamDecoder decoder(std::move(sink));
  CommandOutcome outcome = co_await converse(socket, command, decoder, false);
  co_return outcome;
}

net::awaitable<CommandOutcome> start_agent_command(Socket& socket, AgentCommand command) {
  StartStreamDecoder decoder(nullptr);
  CommandOutcome outcome = co_await converse(socket, command, decoder, true);
  co_return outcome;
}

}  // namespace cove::shim
