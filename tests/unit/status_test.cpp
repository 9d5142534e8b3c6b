// Connect error codes: names, HTTP mapping (envd.md §4, the Connect spec table), JSON shapes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "rpc/status.hpp"

using cove::rpc::Code;
using cove::rpc::Status;
using nlohmann::json;

namespace {
struct Row {
  Code code;
  const char* name;
  int http;
};
// Transcribed from envd.md §4 ("Code → HTTP mapping (Connect spec)"); ok is 200.
const Row kTable[] = {
    {Code::ok, "ok", 200},
    {Code::canceled, "canceled", 499},
    {Code::unknown, "unknown", 500},
    {Code::invalid_argument, "invalid_argument", 400},
    {Code::deadline_exceeded, "deadline_exceeded", 504},
    {Code::not_found, "not_found", 404},
    {Code::already_exists, "already_exists", 409},
    {Code::permission_denied, "permission_denied", 403},
    {Code::resource_exhausted, "resource_exhausted", 429},
    {Code::failed_precondition, "failed_precondition", 400},
    {Code::aborted, "aborted", 409},
    {Code::out_of_range, "out_of_range", 400},
    {Code::unimplemented, "unimplemented", 501},
    {Code::internal, "internal", 500},
    {Code::unavailable, "unavailable", 503},
    {Code::data_loss, "data_loss", 500},
    {Code::unauthenticated, "unauthenticated", 401},
};
}  // namespace

TEST(Status, EveryCodeHasItsConnectNameAndHttpStatus) {
  std::set<std::string> names;
  for (const auto& row : kTable) {
    EXPECT_EQ(cove::rpc::code_name(row.code), row.name) << "code " << static_cast<int>(row.code);
    EXPECT_EQ(cove::rpc::http_status(row.code), row.http) << row.name;
    names.insert(std::string(cove::rpc::code_name(row.code)));
  }
  // Names are distinct, and every enumerator from ok to the last (unauthenticated) is covered.
  EXPECT_EQ(names.size(), std::size(kTable));
  for (int i = 0; i <= static_cast<int>(Code::unauthenticated); ++i) {
    bool covered = false;
    for (const auto& row : kTable) covered = covered || static_cast<int>(row.code) == i;
    EXPECT_TRUE(covered) << "Code value " << i << " (" << cove::rpc::code_name(static_cast<Code>(i))
                         << ") missing from the spec table";
  }
}

TEST(Status, OkHelpers) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_TRUE(Status{}.ok());
  Status s = cove::rpc::error(Code::not_found, "nope");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code, Code::not_found);
  EXPECT_EQ(s.message, "nope");
}

TEST(Status, ErrorJsonShape) {
  json j = json::parse(cove::rpc::error_json({Code::not_found, "process with pid 7 not found"}));
  EXPECT_EQ(j, json({{"code", "not_found"}, {"message", "process with pid 7 not found"}}));

  // No message: only the code.
  json bare = json::parse(cove::rpc::error_json({Code::unimplemented, ""}));
  EXPECT_EQ(bare, json({{"code", "unimplemented"}}));

  // Quotes and control characters are escaped so the body stays valid JSON.
  json esc = json::parse(cove::rpc::error_json({Code::invalid_argument, "bad \"path\"\n\\x"}));
  EXPECT_EQ(esc.at("message"), "bad \"path\"\n\\x");
}

TEST(Status, ErrorJsonToleratesInvalidUtf8) {
  std::string out;
  ASSERT_NO_THROW(out = cove::rpc::error_json({Code::not_found, std::string("file \xff\xfe not found")}));
  json j = json::parse(out);  // must be valid JSON (hence valid UTF-8)
  EXPECT_EQ(j.at("code"), "not_found");
  std::string msg = j.at("message");
  EXPECT_EQ(msg.rfind("file ", 0), 0u);
  EXPECT_NE(msg.find("not found"), std::string::npos);
}

TEST(Status, EndStreamJson) {
  EXPECT_EQ(cove::rpc::end_stream_json(Status::Ok()), "{}");
  json j = json::parse(cove::rpc::end_stream_json({Code::deadline_exceeded, "context deadline exceeded"}));
  EXPECT_EQ(j, json::parse(R"({"error":{"code":"deadline_exceeded","message":"context deadline exceeded"}})"));
  json bare = json::parse(cove::rpc::end_stream_json({Code::internal, ""}));
  EXPECT_EQ(bare, json::parse(R"({"error":{"code":"internal"}})"));
  std::string invalid;
  ASSERT_NO_THROW(invalid = cove::rpc::end_stream_json({Code::internal, std::string("\xc3")}));
  EXPECT_TRUE(json::accept(invalid)) << invalid;
}
