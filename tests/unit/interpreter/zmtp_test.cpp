#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interpreter/zmtp.hpp"

namespace cove::interpreter::zmtp {
namespace {

// A greeting as libzmq 4.3 writes it: version 3.1, a ZMTP 1.0 length in the padding.
std::string libzmq_greeting(uint8_t major = 3, uint8_t minor = 1, bool as_server = true) {
  std::string g(kGreetingSize, '\0');
  g[0] = static_cast<char>(0xff);
  g[8] = 1;
  g[9] = 0x7f;
  g[10] = static_cast<char>(major);
  g[11] = static_cast<char>(minor);
  g.replace(12, 4, "NULL");
  g[32] = as_server ? 1 : 0;
  return g;
}

TEST(ZmtpGreeting, OursIsVersion30NullAsClient) {
  std::string g = make_greeting();
  ASSERT_EQ(g.size(), 64u);
  EXPECT_EQ(static_cast<uint8_t>(g[0]), 0xff);
  EXPECT_EQ(g.substr(1, 8), std::string(8, '\0'));
  EXPECT_EQ(g[9], 0x7f);
  EXPECT_EQ(g[10], 3);
  EXPECT_EQ(g[11], 0);
  EXPECT_EQ(g.substr(12, 20), std::string("NULL") + std::string(16, '\0'));
  EXPECT_EQ(g[32], 0);
  EXPECT_EQ(g.substr(33), std::string(31, '\0'));

  Greeting parsed = parse_greeting(g);
  EXPECT_EQ(parsed.major, 3);
  EXPECT_EQ(parsed.minor, 0);
  EXPECT_EQ(parsed.mechanism, "NULL");
  EXPECT_FALSE(parsed.as_server);
}

TEST(ZmtpGreeting, AcceptsLibzmqMinorVersions) {
  for (uint8_t minor : {0, 1, 7}) {
    Greeting g = parse_greeting(libzmq_greeting(3, minor));
    EXPECT_EQ(g.minor, minor);
    EXPECT_EQ(g.mechanism, "NULL");
    EXPECT_TRUE(g.as_server);
  }
  std::string plain = libzmq_greeting();
  plain.replace(12, 5, std::string("PLAIN"));
  EXPECT_EQ(parse_greeting(plain).mechanism, "PLAIN");
}

TEST(ZmtpGreeting, RejectsMalformedGreetings) {
  EXPECT_THROW(parse_greeting(libzmq_greeting().substr(0, 63)), ProtocolError);
  EXPECT_THROW(parse_greeting(libzmq_greeting() + "x"), ProtocolError);
  std::string bad_signature = libzmq_greeting();
  bad_signature[0] = 'G';  // e.g. an HTTP server on the port
  EXPECT_THROW(parse_greeting(bad_signature), ProtocolError);
  std::string bad_tail = libzmq_greeting();
  bad_tail[9] = 0x7e;
  EXPECT_THROW(parse_greeting(bad_tail), ProtocolError);
  EXPECT_THROW(parse_greeting(libzmq_greeting(2, 0)), ProtocolError);
  EXPECT_THROW(parse_greeting(libzmq_greeting(4, 0)), ProtocolError);
  std::string junk_mechanism = libzmq_greeting();
  junk_mechanism[20] = 'X';  // after the NUL that ends "NULL"
  EXPECT_THROW(parse_greeting(junk_mechanism), ProtocolError);
  std::string bad_server = libzmq_greeting();
  bad_server[32] = 2;
  EXPECT_THROW(parse_greeting(bad_server), ProtocolError);
  try {
    parse_greeting(libzmq_greeting(2, 0));
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("version 2.0"), std::string::npos) << e.what();
  }
}

TEST(ZmtpCommand, ReadyRoundTripsThroughTheDecoder) {
  std::string ready = encode_ready({{"Socket-Type", "DEALER"}, {"Identity", "abc-123"}});
  // Short command frame: flags 0x04, size, 5 "READY", then the properties.
  EXPECT_EQ(static_cast<uint8_t>(ready[0]), 0x04);
  EXPECT_EQ(static_cast<uint8_t>(ready[1]), ready.size() - 2);
  EXPECT_EQ(ready.substr(2, 6), "\x05READY");
  EXPECT_EQ(ready.substr(8, 16), std::string("\x0bSocket-Type\0\0\0\x06", 16));

  Decoder d;
  d.feed(ready);
  auto in = d.next();
  ASSERT_TRUE(in.has_value());
  ASSERT_TRUE(in->command.has_value());
  EXPECT_EQ(in->command->name, "READY");
  Metadata md = parse_metadata(in->command->data);
  ASSERT_EQ(md.size(), 2u);
  EXPECT_EQ(md[0], (std::pair<std::string, std::string>{"Socket-Type", "DEALER"}));
  EXPECT_EQ(md[1], (std::pair<std::string, std::string>{"Identity", "abc-123"}));
  EXPECT_EQ(find_property(md, "socket-type").value_or(""), "DEALER");
  EXPECT_FALSE(find_property(md, "Resource").has_value());
  EXPECT_FALSE(d.next().has_value());
}

TEST(ZmtpCommand, EmptyIdentityAndErrorReason) {
  Metadata md = parse_metadata(encode_metadata({{"Identity", ""}}));
  ASSERT_EQ(md.size(), 1u);
  EXPECT_EQ(md[0].second, "");

  Command c = parse_command(encode_command_body("ERROR", std::string("\x0dno such thing")));
  EXPECT_EQ(c.name, "ERROR");
  EXPECT_EQ(parse_error_reason(c.data), "no such thing");
  EXPECT_EQ(parse_error_reason(""), "");
  EXPECT_EQ(parse_error_reason(std::string("\x20short")), "short");  // length past the end: clamped
}

TEST(ZmtpCommand, RejectsMalformedCommandsAndMetadata) {
  EXPECT_THROW(parse_command(""), ProtocolError);
  EXPECT_THROW(parse_command(std::string("\x00", 1)), ProtocolError);
  EXPECT_THROW(parse_command("\x09READY"), ProtocolError);  // name longer than the body
  std::string good = encode_metadata({{"Socket-Type", "ROUTER"}});
  EXPECT_THROW(parse_metadata(good.substr(0, good.size() - 1)), ProtocolError);  // value cut
  EXPECT_THROW(parse_metadata(good.substr(0, 5)), ProtocolError);                // name cut
  EXPECT_THROW(parse_metadata(std::string("\x00\x00\x00\x00\x00", 5)), ProtocolError);  // empty name
  std::string huge_value = std::string("\x01") + "A" + std::string("\xff\xff\xff\xff", 4) + "x";
  EXPECT_THROW(parse_metadata(huge_value), ProtocolError);
  EXPECT_THROW(encode_metadata({{"", "x"}}), ProtocolError);
  EXPECT_THROW(encode_command_body("", ""), ProtocolError);
}

TEST(ZmtpFrame, ShortAndLongEncodings) {
  std::string empty = encode_frame("", false);
  EXPECT_EQ(empty, std::string("\x00\x00", 2));
  std::string more = encode_frame("ab", true);
  EXPECT_EQ(more, std::string("\x01\x02" "ab", 4));
  std::string s255 = encode_frame(std::string(255, 'x'), false);
  EXPECT_EQ(s255.size(), 257u);
  EXPECT_EQ(static_cast<uint8_t>(s255[1]), 255);
  std::string l256 = encode_frame(std::string(256, 'y'), true);
  ASSERT_EQ(l256.size(), 265u);
  EXPECT_EQ(static_cast<uint8_t>(l256[0]), 0x03);  // LONG | MORE
  EXPECT_EQ(l256.substr(1, 8), std::string("\0\0\0\0\0\0\x01\x00", 8));
  std::string cmd = encode_frame("x", false, true);
  EXPECT_EQ(static_cast<uint8_t>(cmd[0]), 0x04);

  for (size_t size : {0u, 1u, 255u, 256u, 70000u}) {
    std::string body(size, '\0');
    for (size_t i = 0; i < size; ++i) body[i] = static_cast<char>(i * 7);
    Decoder d;
    d.feed(encode_frame(body, size % 2 == 1));
    auto f = d.next_frame();
    ASSERT_TRUE(f.has_value()) << size;
    EXPECT_EQ(f->body, body);
    EXPECT_EQ(f->more, size % 2 == 1);
    EXPECT_FALSE(f->command);
    EXPECT_EQ(d.buffered(), 0u);
  }
}

TEST(ZmtpDecoder, MessagesFedByteByByte) {
  std::vector<std::string> first = {"kernel.abc.status", "<IDS|MSG>", "", std::string(300, 'h'), "{}"};
  std::vector<std::string> second = {std::string("\x00\x01\xff", 3)};
  std::string wire = encode_ready({{"Socket-Type", "PUB"}}) + encode_message(first) + encode_message(second);

  Decoder d;
  std::vector<Incoming> got;
  for (char c : wire) {
    d.feed(std::string_view(&c, 1));
    while (auto in = d.next()) got.push_back(std::move(*in));
  }
  ASSERT_EQ(got.size(), 3u);
  ASSERT_TRUE(got[0].command.has_value());
  EXPECT_EQ(got[0].command->name, "READY");
  EXPECT_FALSE(got[1].command.has_value());
  EXPECT_EQ(got[1].message, first);
  EXPECT_EQ(got[2].message, second);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(ZmtpDecoder, ArbitraryChunksGiveTheSameMessages) {
  std::vector<std::vector<std::string>> messages;
  std::string wire;
  for (int i = 0; i < 50; ++i) {
    std::vector<std::string> m;
    for (int j = 0; j <= i % 4; ++j) m.push_back(std::string(static_cast<size_t>(i * 37 + j * 101), char('a' + j)));
    wire += encode_message(m);
    messages.push_back(std::move(m));
  }
  for (size_t chunk : {3u, 64u, 255u, 4096u}) {
    Decoder d;
    std::vector<std::vector<std::string>> got;
    for (size_t at = 0; at < wire.size(); at += chunk) {
      d.feed(std::string_view(wire).substr(at, chunk));
      while (auto in = d.next()) got.push_back(std::move(in->message));
    }
    EXPECT_EQ(got, messages) << "chunk " << chunk;
  }
}

TEST(ZmtpDecoder, EncodeMessageNeedsAFrame) { EXPECT_THROW(encode_message({}), ProtocolError); }

TEST(ZmtpDecoder, ReservedFlagBitsFailAndStayFailed) {
  Decoder d;
  d.feed(std::string("\x08\x00", 2));
  EXPECT_THROW(d.next(), ProtocolError);
  EXPECT_THROW(d.next(), ProtocolError);
  EXPECT_THROW(d.feed(encode_frame("ok", false)), ProtocolError);
}

TEST(ZmtpDecoder, OversizedFramesFailBeforeTheirBodyArrives) {
  Decoder d;  // default limit: 256 MiB
  // A long frame announcing 2^63 bytes: refused from its header alone, nothing allocated.
  d.feed(std::string("\x02\x80\x00\x00\x00\x00\x00\x00\x00", 9));
  try {
    d.next();
    ADD_FAILURE() << "no error";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }

  Decoder small(100);
  small.feed(encode_frame(std::string(100, 'x'), false));
  EXPECT_TRUE(small.next().has_value());
  small.feed(encode_frame(std::string(101, 'x'), false).substr(0, 2));
  EXPECT_THROW(small.next(), ProtocolError);
}

TEST(ZmtpDecoder, OversizedMessagesFail) {
  Decoder d(100);
  d.feed(encode_message({std::string(60, 'a'), std::string(60, 'b')}));
  EXPECT_THROW(d.next(), ProtocolError);
}

TEST(ZmtpDecoder, CommandsMustBeSingleFramesBetweenMessages) {
  Decoder with_more;
  with_more.feed(std::string("\x05\x01x", 3));  // COMMAND | MORE
  EXPECT_THROW(with_more.next(), ProtocolError);

  Decoder inside;
  inside.feed(encode_frame("part", true) + encode_frame("\x05READY", false, true));
  EXPECT_THROW(inside.next(), ProtocolError);

  Decoder bad_body;
  bad_body.feed(encode_frame("\x09READY", false, true));
  EXPECT_THROW(bad_body.next(), ProtocolError);
}

TEST(ZmtpDecoder, IncompleteInputWaits) {
  Decoder d;
  std::string frame = encode_frame(std::string(1000, 'z'), false);
  d.feed(frame.substr(0, 5));  // inside the 8-byte length
  EXPECT_FALSE(d.next().has_value());
  d.feed(frame.substr(5, 500));
  EXPECT_FALSE(d.next().has_value());
  d.feed(frame.substr(505));
  auto in = d.next();
  ASSERT_TRUE(in.has_value());
  ASSERT_EQ(in->message.size(), 1u);
  EXPECT_EQ(in->message[0], std::string(1000, 'z'));
}

}  // namespace
}  // namespace cove::interpreter::zmtp
