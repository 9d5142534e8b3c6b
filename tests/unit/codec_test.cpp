// The two Connect codecs: proto3 canonical JSON and binary protobuf, plus Content-Type mapping.
#include <gtest/gtest.h>
#include <google/protobuf/util/message_differencer.h>

#include <nlohmann/json.hpp>

#include "filesystem.pb.h"
#include "process.pb.h"
#include "rpc/codec.hpp"

using cove::rpc::Codec;
using cove::rpc::codec_for_content_type;
using cove::rpc::content_type_for;
using cove::rpc::decode_message;
using cove::rpc::encode_message;
using nlohmann::json;

// ---- JSON decoding ----------------------------------------------------------------------------

TEST(CodecJsonDecode, AcceptsCamelCaseAndSnakeCase) {
  filesystem::WatchDirRequest camel, snake;
  std::string err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"path":"/a","includeEntry":true,"allowNetworkMounts":true})",
                             camel, &err)) << err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"path":"/b","include_entry":true,"allow_network_mounts":true,"recursive":true})",
                             snake, &err)) << err;
  EXPECT_EQ(camel.path(), "/a");
  EXPECT_TRUE(camel.include_entry());
  EXPECT_TRUE(camel.allow_network_mounts());
  EXPECT_FALSE(camel.recursive());
  EXPECT_EQ(snake.path(), "/b");
  EXPECT_TRUE(snake.include_entry());
  EXPECT_TRUE(snake.allow_network_mounts());
  EXPECT_TRUE(snake.recursive());
}

TEST(CodecJsonDecode, IgnoresUnknownFields) {
  filesystem::StatRequest req;
  std::string err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"bogus":1,"path":"/x","nested":{"a":[1,{"b":null}]},"alsoBogus":"s"})",
                             req, &err)) << err;
  EXPECT_EQ(req.path(), "/x");
}

TEST(CodecJsonDecode, EnumsByNameAndByNumber) {
  process::SendSignalRequest by_name, by_number, term;
  std::string err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"process":{"pid":77},"signal":"SIGNAL_SIGKILL"})", by_name, &err)) << err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"process":{"pid":78},"signal":9})", by_number, &err)) << err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"signal":15})", term, &err)) << err;
  EXPECT_EQ(by_name.signal(), process::SIGNAL_SIGKILL);
  EXPECT_EQ(by_name.process().pid(), 77u);
  EXPECT_EQ(by_number.signal(), process::SIGNAL_SIGKILL);
  EXPECT_EQ(by_number.process().pid(), 78u);
  EXPECT_EQ(term.signal(), process::SIGNAL_SIGTERM);
}

TEST(CodecJsonDecode, Int64AsStringOrNumber) {
  filesystem::EntryInfo as_string, as_number;
  std::string err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"size":"9007199254740993"})", as_string, &err)) << err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"size":1234})", as_number, &err)) << err;
  EXPECT_EQ(as_string.size(), 9007199254740993LL);  // beyond double precision: must not go through a double
  EXPECT_EQ(as_number.size(), 1234);
}

TEST(CodecJsonDecode, BytesOneofsAndMaps) {
  process::SendInputRequest input;
  process::StartRequest start;
  std::string err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"process":{"tag":"web"},"input":{"stdin":"ZGF0YQo="}})", input, &err)) << err;
  EXPECT_EQ(input.process().selector_case(), process::ProcessSelector::kTag);
  EXPECT_EQ(input.process().tag(), "web");
  EXPECT_EQ(input.input().input_case(), process::ProcessInput::kStdin);
  EXPECT_EQ(input.input().stdin(), "data\n");

  ASSERT_TRUE(decode_message(Codec::json,
                             R"({"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"envs":{"A":"1","B":"two"},"cwd":"/tmp"},"stdin":false,"pty":{"size":{"cols":80,"rows":24}}})",
                             start, &err)) << err;
  EXPECT_EQ(start.process().cmd(), "/bin/bash");
  ASSERT_EQ(start.process().args_size(), 3);
  EXPECT_EQ(start.process().args(2), "echo hi");
  EXPECT_EQ(start.process().envs().at("B"), "two");
  EXPECT_TRUE(start.process().has_cwd());
  EXPECT_EQ(start.process().cwd(), "/tmp");
  EXPECT_TRUE(start.has_stdin());  // proto3 optional: explicit false is present
  EXPECT_FALSE(start.stdin());
  EXPECT_TRUE(start.has_pty());
  EXPECT_EQ(start.pty().size().cols(), 80u);
  EXPECT_EQ(start.pty().size().rows(), 24u);
  EXPECT_FALSE(start.has_tag());
}

TEST(CodecJsonDecode, EmptyBodyIsEmptyMessage) {
  filesystem::StatRequest req;
  req.set_path("/leftover");
  std::string err;
  ASSERT_TRUE(decode_message(Codec::json, "  \r\n", req, &err)) << err;
  EXPECT_EQ(req.path(), "");
}

TEST(CodecJsonDecode, InvalidJsonFailsWithError) {
  for (const char* bad : {"{", "{\"path\":", "not json", "{\"path\":\"a\"}}", "[1,2]"}) {
    filesystem::StatRequest req;
    std::string err;
    EXPECT_FALSE(decode_message(Codec::json, bad, req, &err)) << bad;
    EXPECT_FALSE(err.empty()) << bad;
  }
}

TEST(CodecJsonDecode, WrongFieldTypeFails) {
  filesystem::ListDirRequest req;
  std::string err;
  EXPECT_FALSE(decode_message(Codec::json, R"({"depth":"deep"})", req, &err));
  EXPECT_FALSE(err.empty());
}

// connect-go decodes with protojson DiscardUnknown, which ignores unknown enum *names* as well as
// unknown fields: the field keeps its default (SendSignal then answers "invalid signal").
TEST(CodecJsonDecode, UnknownEnumNameIsIgnoredLikeDiscardUnknown) {
  process::SendSignalRequest sig;
  std::string err;
  ASSERT_TRUE(decode_message(Codec::json, R"({"process":{"pid":5},"signal":"SIGNAL_SIGHUP"})", sig, &err)) << err;
  EXPECT_EQ(sig.signal(), process::SIGNAL_UNSPECIFIED);
  EXPECT_EQ(sig.process().pid(), 5u);
}

TEST(CodecJsonDecode, NullErrorPointerTolerated) {
  filesystem::StatRequest req;
  EXPECT_FALSE(decode_message(Codec::json, "{", req, nullptr));
  EXPECT_FALSE(decode_message(Codec::proto, std::string("\xff\xff\xff", 3), req, nullptr));
}

// ---- JSON encoding ----------------------------------------------------------------------------

TEST(CodecJsonEncode, ExitZeroMatchesEnvdExactly) {
  process::StartResponse resp;
  auto* end = resp.mutable_event()->mutable_end();
  end->set_exit_code(0);
  end->set_exited(true);
  end->set_status("exit status 0");
  // envd.md §7: zero values omitted.
  EXPECT_EQ(encode_message(Codec::json, resp), R"({"event":{"end":{"exited":true,"status":"exit status 0"}}})");
}

TEST(CodecJsonEncode, CamelCaseNamesAndNegativeSint32) {
  process::ConnectResponse resp;
  auto* end = resp.mutable_event()->mutable_end();
  end->set_exit_code(-1);
  end->set_exited(false);
  end->set_status("signal: killed");
  end->set_error("signal: killed");
  json j = json::parse(encode_message(Codec::json, resp));
  const json& e = j.at("event").at("end");
  EXPECT_EQ(e.at("exitCode"), -1);
  EXPECT_FALSE(e.contains("exit_code"));
  EXPECT_FALSE(e.contains("exited"));  // false is a default
  EXPECT_EQ(e.at("status"), "signal: killed");
  EXPECT_EQ(e.at("error"), "signal: killed");
  EXPECT_EQ(e.size(), 3u);
}

TEST(CodecJsonEncode, OmitsDefaults) {
  EXPECT_EQ(encode_message(Codec::json, process::StartRequest()), "{}");
  filesystem::EntryInfo info;
  info.set_name("a.txt");
  info.set_type(filesystem::FILE_TYPE_UNSPECIFIED);
  info.set_size(0);
  json j = json::parse(encode_message(Codec::json, info));
  EXPECT_EQ(j, json({{"name", "a.txt"}}));
  // A oneof member set to its default is still present (it selects the case).
  process::ProcessEvent ev;
  ev.mutable_start()->set_pid(0);
  EXPECT_EQ(json::parse(encode_message(Codec::json, ev)), json::parse(R"({"start":{}})"));
}

TEST(CodecJsonEncode, BytesAsPaddedBase64) {
  process::ProcessEvent ev;
  ev.mutable_data()->set_stdout("a");
  EXPECT_EQ(json::parse(encode_message(Codec::json, ev)).at("data").at("stdout"), "YQ==");
  ev.mutable_data()->set_stderr("data");
  EXPECT_EQ(json::parse(encode_message(Codec::json, ev)).at("data").at("stderr"), "ZGF0YQ==");
  ev.mutable_data()->set_pty(std::string("\x00\xff\xfe", 3));
  EXPECT_EQ(json::parse(encode_message(Codec::json, ev)).at("data").at("pty"), "AP/+");
}

TEST(CodecJsonEncode, Int64AsStringEnumsByNameTimestampRfc3339) {
  filesystem::EntryInfo info;
  info.set_name("f");
  info.set_type(filesystem::FILE_TYPE_DIRECTORY);
  info.set_size(1234);
  info.set_symlink_target("/t");
  info.mutable_modified_time()->set_seconds(1767225600);  // 2026-01-01T00:00:00Z
  info.mutable_modified_time()->set_nanos(123456789);
  json j = json::parse(encode_message(Codec::json, info));
  EXPECT_EQ(j.at("size"), "1234");
  EXPECT_EQ(j.at("type"), "FILE_TYPE_DIRECTORY");
  EXPECT_EQ(j.at("symlinkTarget"), "/t");
  EXPECT_EQ(j.at("modifiedTime"), "2026-01-01T00:00:00.123456789Z");
}

TEST(CodecJsonEncode, JsonRoundTrip) {
  process::StartRequest req;
  req.mutable_process()->set_cmd("/bin/sh");
  req.mutable_process()->add_args("-c");
  req.mutable_process()->add_args("echo \"quoted\" \xe2\x9c\x93");
  (*req.mutable_process()->mutable_envs())["K"] = "v";
  req.set_tag("t");
  req.set_stdin(false);
  process::StartRequest back;
  std::string err;
  ASSERT_TRUE(decode_message(Codec::json, encode_message(Codec::json, req), back, &err)) << err;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(req, back))
      << req.DebugString() << " vs " << back.DebugString();
}

// ---- binary protobuf --------------------------------------------------------------------------

TEST(CodecProto, RoundTrip) {
  process::StartResponse resp;
  resp.mutable_event()->mutable_data()->set_stdout(std::string("bin\0ary", 7));
  std::string wire = encode_message(Codec::proto, resp);
  EXPECT_EQ(wire, resp.SerializeAsString());
  process::StartResponse back;
  std::string err;
  ASSERT_TRUE(decode_message(Codec::proto, wire, back, &err)) << err;
  EXPECT_EQ(back.event().data().stdout(), std::string("bin\0ary", 7));

  process::StartResponse end;
  end.mutable_event()->mutable_end()->set_exit_code(-1);
  process::StartResponse end_back;
  ASSERT_TRUE(decode_message(Codec::proto, encode_message(Codec::proto, end), end_back, &err)) << err;
  EXPECT_EQ(end_back.event().end().exit_code(), -1);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(end, end_back));
}

TEST(CodecProto, EmptyBodyIsEmptyMessage) {
  filesystem::StatRequest req;
  std::string err;
  ASSERT_TRUE(decode_message(Codec::proto, "", req, &err)) << err;
  EXPECT_EQ(req.path(), "");
}

TEST(CodecProto, GarbageFailsWithError) {
  filesystem::StatRequest req;
  std::string err;
  // Field 1, length-delimited, claims 100 bytes but none follow.
  EXPECT_FALSE(decode_message(Codec::proto, std::string("\x0a\x64", 2), req, &err));
  EXPECT_FALSE(err.empty());
}

// ---- Content-Type mapping ---------------------------------------------------------------------

TEST(CodecContentType, Unary) {
  EXPECT_EQ(codec_for_content_type("application/json", false), Codec::json);
  EXPECT_EQ(codec_for_content_type("application/json; charset=utf-8", false), Codec::json);
  EXPECT_EQ(codec_for_content_type("application/json;charset=utf-8", false), Codec::json);
  EXPECT_EQ(codec_for_content_type("Application/JSON", false), Codec::json);
  EXPECT_EQ(codec_for_content_type("application/proto", false), Codec::proto);
  EXPECT_EQ(codec_for_content_type("APPLICATION/PROTO", false), Codec::proto);
  EXPECT_EQ(codec_for_content_type("application/connect+json", false), std::nullopt);
  EXPECT_EQ(codec_for_content_type("application/connect+proto", false), std::nullopt);
  EXPECT_EQ(codec_for_content_type("text/plain", false), std::nullopt);
  EXPECT_EQ(codec_for_content_type("", false), std::nullopt);
  EXPECT_EQ(codec_for_content_type("application/jsonx", false), std::nullopt);
  EXPECT_EQ(codec_for_content_type("application/grpc", false), std::nullopt);
}

TEST(CodecContentType, Streaming) {
  EXPECT_EQ(codec_for_content_type("application/connect+json", true), Codec::json);
  EXPECT_EQ(codec_for_content_type("Application/Connect+JSON; charset=utf-8", true), Codec::json);
  EXPECT_EQ(codec_for_content_type("application/connect+proto", true), Codec::proto);
  EXPECT_EQ(codec_for_content_type("application/json", true), std::nullopt);
  EXPECT_EQ(codec_for_content_type("application/proto", true), std::nullopt);
  EXPECT_EQ(codec_for_content_type("application/grpc-web+proto", true), std::nullopt);
}

TEST(CodecContentType, ResponseContentTypes) {
  EXPECT_EQ(content_type_for(Codec::json, false), "application/json");
  EXPECT_EQ(content_type_for(Codec::proto, false), "application/proto");
  EXPECT_EQ(content_type_for(Codec::json, true), "application/connect+json");
  EXPECT_EQ(content_type_for(Codec::proto, true), "application/connect+proto");
  // Round trip through the parser.
  for (bool streaming : {false, true}) {
    for (Codec c : {Codec::json, Codec::proto}) {
      EXPECT_EQ(codec_for_content_type(content_type_for(c, streaming), streaming), c);
    }
  }
}
