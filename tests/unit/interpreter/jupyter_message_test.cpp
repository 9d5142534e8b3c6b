#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "interpreter/jupyter_message.hpp"
#include "text/uuid.hpp"

namespace cove::interpreter {
namespace {

JupyterMessage sample() {
  JupyterMessage m;
  m.identities = {"kernel.7d1c.stream"};
  m.header = make_header("stream", "session-1", "e2b");
  m.parent_header = {{"msg_id", "parent-1"}};
  m.metadata = nlohmann::json::object();
  m.content = {{"name", "stdout"}, {"text", "h\u00e9llo\n"}};
  return m;
}

TEST(JupyterMessage, SignatureMatchesPythonHmac) {
  MessageSigner signer("secret");
  // python3 -c "import hmac,hashlib; print(hmac.new(b'secret',
  //   b'{\"msg_id\":\"1\"}{}{}{\"code\":\"1+1\"}', hashlib.sha256).hexdigest())"
  EXPECT_EQ(signer.sign(R"({"msg_id":"1"})", "{}", "{}", R"({"code":"1+1"})"),
            "8b401df890f3e1a0a11fe0065dc9c527656a04e4c12230f675f0a5b83a2f600c");
  EXPECT_TRUE(signer.verify("8b401df890f3e1a0a11fe0065dc9c527656a04e4c12230f675f0a5b83a2f600c",
                            R"({"msg_id":"1"})", "{}", "{}", R"({"code":"1+1"})"));
  EXPECT_FALSE(signer.verify("8b401df890f3e1a0a11fe0065dc9c527656a04e4c12230f675f0a5b83a2f600d",
                             R"({"msg_id":"1"})", "{}", "{}", R"({"code":"1+1"})"));
  EXPECT_FALSE(signer.verify("8b40", R"({"msg_id":"1"})", "{}", "{}", R"({"code":"1+1"})"));
}

TEST(JupyterMessage, EncodeLayoutAndRoundTrip) {
  MessageSigner signer("k3y");
  JupyterMessage m = sample();
  m.buffers = {std::string("\x00\x01", 2)};
  auto frames = signer.encode(m);
  ASSERT_EQ(frames.size(), 8u);
  EXPECT_EQ(frames[0], "kernel.7d1c.stream");
  EXPECT_EQ(frames[1], "<IDS|MSG>");
  EXPECT_EQ(frames[2], signer.sign(frames[3], frames[4], frames[5], frames[6]));
  EXPECT_EQ(frames[2].size(), 64u);
  EXPECT_EQ(nlohmann::json::parse(frames[3]), m.header);
  EXPECT_EQ(nlohmann::json::parse(frames[6]), m.content);
  EXPECT_EQ(frames[7], std::string("\x00\x01", 2));

  JupyterMessage back = signer.decode(frames);
  EXPECT_EQ(back.identities, m.identities);
  EXPECT_EQ(back.header, m.header);
  EXPECT_EQ(back.parent_header, m.parent_header);
  EXPECT_EQ(back.metadata, m.metadata);
  EXPECT_EQ(back.content, m.content);
  EXPECT_EQ(back.buffers, m.buffers);
  EXPECT_EQ(back.msg_type(), "stream");
  EXPECT_EQ(back.parent_msg_id(), "parent-1");
}

TEST(JupyterMessage, DelimiterSearchWithSeveralOrNoIdentities) {
  MessageSigner signer("k");
  JupyterMessage m = sample();
  m.identities = {std::string("\x00\x6b\x8b\x45\x67", 5), "another"};
  auto back = signer.decode(signer.encode(m));
  EXPECT_EQ(back.identities, m.identities);
  EXPECT_EQ(back.content, m.content);

  m.identities.clear();  // a DEALER receives replies without a routing prefix
  auto frames = signer.encode(m);
  EXPECT_EQ(frames[0], "<IDS|MSG>");
  EXPECT_TRUE(signer.decode(frames).identities.empty());

  JupyterMessage empty_parent = sample();
  empty_parent.parent_header = nlohmann::json::object();  // e.g. the kernel's "starting" status
  EXPECT_EQ(signer.decode(signer.encode(empty_parent)).parent_msg_id(), "");
}

TEST(JupyterMessage, TamperedMessagesAreRefused) {
  MessageSigner signer("k");
  auto frames = signer.encode(sample());
  const size_t d = 1;  // delimiter index (one identity)

  auto bad_sig = frames;
  bad_sig[d + 1][0] = bad_sig[d + 1][0] == 'a' ? 'b' : 'a';
  EXPECT_THROW(signer.decode(bad_sig), JupyterMessageError);

  auto bad_content = frames;
  bad_content[d + 5] = R"({"name":"stdout","text":"evil"})";
  EXPECT_THROW(signer.decode(bad_content), JupyterMessageError);

  auto other_key = MessageSigner("other").encode(sample());
  try {
    signer.decode(other_key);
    ADD_FAILURE() << "accepted another key's signature";
  } catch (const JupyterMessageError& e) {
    EXPECT_STREQ(e.what(), "invalid message signature");
  }

  auto unsigned_frames = MessageSigner("").encode(sample());
  EXPECT_EQ(unsigned_frames[d + 1], "");
  EXPECT_THROW(signer.decode(unsigned_frames), JupyterMessageError);
  // An empty key means an unsigned session: anything goes, as in Jupyter.
  EXPECT_NO_THROW(MessageSigner("").decode(frames));
}

TEST(JupyterMessage, MalformedFramesGiveClearErrors) {
  MessageSigner signer("k");
  auto expect_error = [&](const std::vector<std::string>& frames, const std::string& needle) {
    try {
      signer.decode(frames);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const JupyterMessageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({}, "delimiter");
  expect_error({"a", "b", "c"}, "delimiter");
  auto frames = signer.encode(sample());
  expect_error(std::vector<std::string>(frames.begin(), frames.end() - 1), "truncated");

  // Correctly signed but not JSON, or not an object.
  std::string sig = signer.sign("{not json", "{}", "{}", "{}");
  expect_error({"<IDS|MSG>", sig, "{not json", "{}", "{}", "{}"}, "invalid JSON in the message header");
  sig = signer.sign("{}", "{}", "{}", "[1]");
  expect_error({"<IDS|MSG>", sig, "{}", "{}", "{}", "[1]"}, "content is not a JSON object");
  std::string bad_utf8 = "{\"text\":\"\xff\"}";
  sig = signer.sign("{}", "{}", "{}", bad_utf8);
  expect_error({"<IDS|MSG>", sig, "{}", "{}", "{}", bad_utf8}, "invalid JSON in the message content");
}

TEST(JupyterMessage, HeaderFormat) {
  auto h = make_header("execute_request", "sess", "e2b");
  ASSERT_TRUE(h.is_object());
  EXPECT_EQ(h.size(), 6u);
  EXPECT_EQ(h["msg_type"], "execute_request");
  EXPECT_EQ(h["session"], "sess");
  EXPECT_EQ(h["username"], "e2b");
  EXPECT_EQ(h["version"], "5.3");
  std::regex uuid4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  EXPECT_TRUE(std::regex_match(h["msg_id"].get<std::string>(), uuid4)) << h["msg_id"];
  std::regex date("^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}Z$");
  EXPECT_TRUE(std::regex_match(h["date"].get<std::string>(), date)) << h["date"];

  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(text::random_uuid4());
  EXPECT_EQ(ids.size(), 1000u);
}

TEST(JupyterMessage, DatesAsPythonPrintsThem) {
  EXPECT_EQ(to_python_isoformat("2026-11-30T06:53:49.077610Z"), "2026-11-30T06:53:49.077610+00:00");
  EXPECT_EQ(to_python_isoformat("2026-11-30T06:53:49.077610+00:00"), "2026-11-30T06:53:49.077610+00:00");
  EXPECT_EQ(to_python_isoformat("2026-11-30T06:53:49.0776Z"), "2026-11-30T06:53:49.077600+00:00");
  EXPECT_EQ(to_python_isoformat("2026-11-30T06:53:49.077610123Z"), "2026-11-30T06:53:49.077610+00:00");
  EXPECT_EQ(to_python_isoformat("2026-11-30T06:53:49.000000Z"), "2026-11-30T06:53:49+00:00");
  EXPECT_EQ(to_python_isoformat("2026-11-30T06:53:49Z"), "2026-11-30T06:53:49+00:00");
  EXPECT_EQ(to_python_isoformat("2026-11-30 06:53:49.5-05:00"), "2026-11-30T06:53:49.500000-05:00");
  EXPECT_EQ(to_python_isoformat(""), "");
  EXPECT_EQ(to_python_isoformat("yesterday"), "");
  EXPECT_EQ(to_python_isoformat("2026-11-30T06:53:49.1Zjunk"), "");
  EXPECT_EQ(to_python_isoformat("2026-11-30X06:53:49Z"), "");

  std::regex python("^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{6})?\\+00:00$");
  EXPECT_TRUE(std::regex_match(to_python_isoformat(jupyter_now()), python));
}

}  // namespace
}  // namespace cove::interpreter
