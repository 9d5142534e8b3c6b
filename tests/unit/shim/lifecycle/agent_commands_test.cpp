#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lifecycle/agent_commands.hpp"
#include "text/base64.hpp"

namespace cove::shim {
namespace {

std::string frame(unsigned char flags, const std::string& json) {
  std::string out(5, '\0');
  out[0] = static_cast<char>(flags);
  uint32_t n = static_cast<uint32_t>(json.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + json;
}

std::string data(const char* stream, const std::string& bytes) {
  return frame(0, nlohmann::json{{"event", {{"data", {{stream, text::base64_encode(bytes)}}}}}}.dump());
}

TEST(StartRequest, IsAConnectStreamOfOneJsonEnvelope) {
  AgentCommand cmd{"echo \"$A\"", "user", "/app", {{"A", "1"}}, "tok"};
  std::string req = start_request(cmd);
  EXPECT_EQ(req.rfind("POST /process.Process/Start HTTP/1.1\r\n", 0), 0u);
  EXPECT_NE(req.find("Content-Type: application/connect+json\r\n"), std::string::npos);
  EXPECT_NE(req.find("Authorization: Basic " + text::base64_encode("user:") + "\r\n"), std::string::npos);
  EXPECT_NE(req.find("X-Access-Token: tok\r\n"), std::string::npos);
  std::string body = req.substr(req.find("\r\n\r\n") + 4);
  ASSERT_GT(body.size(), 5u);
  EXPECT_EQ(body[0], '\0');  // flags: an ordinary message
  size_t length = (size_t(uint8_t(body[1])) << 24) | (size_t(uint8_t(body[2])) << 16) |
                  (size_t(uint8_t(body[3])) << 8) | uint8_t(body[4]);
  ASSERT_EQ(length, body.size() - 5);
  auto j = nlohmann::json::parse(body.substr(5));
  EXPECT_EQ(j["process"]["cmd"], "/bin/bash");
  EXPECT_EQ(j["process"]["args"], (nlohmann::json{"-l", "-c", "echo \"$A\""}));
  EXPECT_EQ(j["process"]["cwd"], "/app");
  EXPECT_EQ(j["process"]["envs"]["A"], "1");
  // No token, no header; no cwd, the agent's default.
  std::string plain = start_request(AgentCommand{"true", "root", "", {}, ""});
  EXPECT_EQ(plain.find("X-Access-Token"), std::string::npos);
  EXPECT_EQ(plain.find("\"cwd\""), std::string::npos);
}

TEST(StartStreamDecoder, DecodesEventsAcrossArbitraryPieces) {
  std::string stream = frame(0, R"({"event":{"start":{"pid":7}}})") + data("stdout", "hello\n") +
                       data("stderr", "oops\n") + frame(0, R"({"event":{"keepalive":{}}})") +
                       frame(0, R"({"event":{"end":{"exitCode":3,"exited":true,"status":"exit status 3"}}})") +
                       frame(2, "{}");
  for (size_t piece : {size_t{1}, size_t{3}, size_t{7}, stream.size()}) {
    std::string out, err;
    StartStreamDecoder decoder([&](bool is_stderr, std::string_view t) { (is_stderr ? err : out) += t; });
    for (size_t at = 0; at < stream.size(); at += piece) decoder.feed(std::string_view(stream).substr(at, piece));
    EXPECT_TRUE(decoder.finished()) << piece;
    EXPECT_TRUE(decoder.outcome().started);
    EXPECT_EQ(decoder.outcome().exit_code, 3);
    EXPECT_EQ(decoder.outcome().status, "exit status 3");
    EXPECT_TRUE(decoder.outcome().error.empty());
    EXPECT_EQ(out, "hello\n");
    EXPECT_EQ(err, "oops\n");
  }
}

TEST(StartStreamDecoder, ZeroExitCodeIsOmittedInProtoJson) {
  StartStreamDecoder decoder(nullptr);
  decoder.feed(frame(0, R"({"event":{"end":{"exited":true,"status":"exit status 0"}}})") + frame(2, "{}"));
  EXPECT_EQ(decoder.outcome().exit_code, 0);
}

TEST(StartStreamDecoder, EndStreamErrorsAndGarbageEndTheStream) {
  StartStreamDecoder failed(nullptr);
  EXPECT_FALSE(failed.feed(frame(2, R"({"error":{"code":"not_found","message":"user 'x' not found"}})")));
  EXPECT_EQ(failed.outcome().error, "user 'x' not found");
  EXPECT_FALSE(failed.outcome().started);

  StartStreamDecoder garbage(nullptr);
  EXPECT_FALSE(garbage.feed(frame(0, "not json")));
  EXPECT_FALSE(garbage.outcome().error.empty());

  StartStreamDecoder huge(nullptr);
  std::string head("\0\x7f\xff\xff\xff", 5);  // a 2 GiB message is refused before it is buffered
  EXPECT_FALSE(huge.feed(head));
  EXPECT_FALSE(huge.outcome().error.empty());
}

}  // namespace
}  // namespace cove::shim
