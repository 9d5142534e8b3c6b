// Connect streaming envelopes: [flags:1][length:4 BE][payload].
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rpc/envelope.hpp"

using cove::rpc::encode_envelope;
using cove::rpc::Envelope;
using cove::rpc::EnvelopeReader;
using cove::rpc::kFlagCompressed;
using cove::rpc::kFlagEndStream;
using Result = EnvelopeReader::Result;

namespace {
std::string header(uint8_t flags, uint32_t len) {
  std::string h;
  h.push_back(static_cast<char>(flags));
  h.push_back(static_cast<char>((len >> 24) & 0xff));
  h.push_back(static_cast<char>((len >> 16) & 0xff));
  h.push_back(static_cast<char>((len >> 8) & 0xff));
  h.push_back(static_cast<char>(len & 0xff));
  return h;
}
}  // namespace

TEST(Envelope, EncodeLayoutIsFlagThenBigEndianLength) {
  std::string payload(0x010203, 'x');
  std::string e = encode_envelope(kFlagEndStream, payload);
  ASSERT_EQ(e.size(), 5u + payload.size());
  EXPECT_EQ(static_cast<uint8_t>(e[0]), kFlagEndStream);
  EXPECT_EQ(static_cast<uint8_t>(e[1]), 0x00);
  EXPECT_EQ(static_cast<uint8_t>(e[2]), 0x01);
  EXPECT_EQ(static_cast<uint8_t>(e[3]), 0x02);
  EXPECT_EQ(static_cast<uint8_t>(e[4]), 0x03);
  EXPECT_EQ(e.substr(5), payload);
  EXPECT_EQ(encode_envelope(0, ""), std::string("\0\0\0\0\0", 5));
}

TEST(Envelope, RoundTrip) {
  EnvelopeReader reader(1024);
  const std::string payload = "{\"event\":{\"start\":{\"pid\":42}}}";
  reader.feed(encode_envelope(0, payload));
  Envelope env;
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.flags, 0);
  EXPECT_EQ(env.payload, payload);
  EXPECT_EQ(reader.pending(), 0u);
  EXPECT_EQ(reader.next(env), Result::need_more);
}

TEST(Envelope, EmptyPayload) {
  EnvelopeReader reader(16);
  reader.feed(encode_envelope(kFlagEndStream, ""));
  Envelope env;
  env.payload = "stale";
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.flags, kFlagEndStream);
  EXPECT_EQ(env.payload, "");
}

TEST(Envelope, FragmentedInputFedByteByByte) {
  EnvelopeReader reader(1024);
  const std::string a = "first message";
  const std::string b(300, 'b');  // length spans two bytes of the header
  const std::string wire = encode_envelope(0, a) + encode_envelope(kFlagEndStream, b);
  std::vector<Envelope> got;
  for (char c : wire) {
    reader.feed(std::string_view(&c, 1));
    Envelope env;
    Result r;
    while ((r = reader.next(env)) == Result::envelope) got.push_back(env);
    ASSERT_EQ(r, Result::need_more);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].flags, 0);
  EXPECT_EQ(got[0].payload, a);
  EXPECT_EQ(got[1].flags, kFlagEndStream);
  EXPECT_EQ(got[1].payload, b);
  EXPECT_EQ(reader.pending(), 0u);
}

TEST(Envelope, SeveralEnvelopesInOneFeed) {
  EnvelopeReader reader(1024);
  reader.feed(encode_envelope(0, "one") + encode_envelope(0, "two") + encode_envelope(kFlagEndStream, "{}"));
  Envelope env;
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.payload, "one");
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.payload, "two");
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.payload, "{}");
  EXPECT_EQ(env.flags, kFlagEndStream);
  EXPECT_EQ(reader.next(env), Result::need_more);
  EXPECT_EQ(reader.pending(), 0u);
}

// Many envelopes in odd-sized chunks, so the reader's internal compaction happens mid-envelope.
TEST(Envelope, ManyEnvelopesAcrossCompaction) {
  EnvelopeReader reader(1024);
  std::string wire;
  std::vector<std::string> sent;
  for (int i = 0; i < 2000; ++i) {
    sent.push_back("msg-" + std::to_string(i) + std::string(i % 13, '.'));
    wire += encode_envelope(static_cast<uint8_t>(i % 2), sent.back());
  }
  std::vector<Envelope> got;
  for (size_t off = 0; off < wire.size(); off += 7) {
    reader.feed(std::string_view(wire).substr(off, 7));
    Envelope env;
    while (reader.next(env) == Result::envelope) got.push_back(env);
  }
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    ASSERT_EQ(got[i].payload, sent[i]) << "envelope " << i;
    ASSERT_EQ(got[i].flags, i % 2) << "envelope " << i;
  }
  EXPECT_EQ(reader.pending(), 0u);
}

TEST(Envelope, PayloadOfExactlyMaxIsAccepted) {
  EnvelopeReader reader(10);
  reader.feed(encode_envelope(0, std::string(10, 'z')));
  Envelope env;
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.payload, std::string(10, 'z'));
}

TEST(Envelope, OversizedDeclaredLengthIsTooLargeAndSticky) {
  EnvelopeReader reader(10);
  reader.feed(encode_envelope(0, std::string(11, 'z')));
  Envelope env;
  EXPECT_EQ(reader.next(env), Result::too_large);
  EXPECT_EQ(reader.declared_length(), 11u);
  // Sticky: later well-formed input does not revive the stream.
  reader.feed(encode_envelope(0, "ok"));
  EXPECT_EQ(reader.next(env), Result::too_large);
  EXPECT_EQ(reader.next(env), Result::too_large);
  EXPECT_EQ(reader.declared_length(), 11u);
}

TEST(Envelope, OversizedIsDetectedFromTheHeaderAlone) {
  // The reader must not wait for 4 GiB of body before refusing it.
  EnvelopeReader reader(1024);
  reader.feed(header(0, 0xffffffffu));
  Envelope env;
  EXPECT_EQ(reader.next(env), Result::too_large);
  EXPECT_EQ(reader.declared_length(), 0xffffffffull);
}

TEST(Envelope, CompressedFlagPreservedForCaller) {
  EnvelopeReader reader(1024);
  reader.feed(encode_envelope(kFlagCompressed, "gzipped?"));
  reader.feed(encode_envelope(kFlagCompressed | kFlagEndStream, "x"));
  Envelope env;
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.flags, kFlagCompressed);
  EXPECT_EQ(env.payload, "gzipped?");
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.flags, kFlagCompressed | kFlagEndStream);
}

TEST(Envelope, TruncatedEnvelopeLeavesPending) {
  EnvelopeReader reader(1024);
  reader.feed(encode_envelope(0, "complete"));
  reader.feed(header(0, 10) + "abc");  // 7 bytes of body missing
  Envelope env;
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.payload, "complete");
  EXPECT_EQ(reader.next(env), Result::need_more);
  EXPECT_EQ(reader.pending(), 8u);

  EnvelopeReader header_only(1024);
  header_only.feed(std::string("\0\0\0", 3));
  EXPECT_EQ(header_only.next(env), Result::need_more);
  EXPECT_EQ(header_only.pending(), 3u);

  // Completing it yields the envelope.
  reader.feed("defghij");
  ASSERT_EQ(reader.next(env), Result::envelope);
  EXPECT_EQ(env.payload, "abcdefghij");
  EXPECT_EQ(reader.pending(), 0u);
}
