// Streaming gzip: chunked round trips, concatenated members, Go's error texts.
#include <gtest/gtest.h>

#include <zlib.h>

#include <random>
#include <string>

#include "files/gzip.hpp"

namespace cove::files {
namespace {

std::string compress(const std::string& data, size_t piece) {
  GzipEncoder enc;
  std::string out;
  for (size_t i = 0; i < data.size(); i += piece) enc.write(std::string_view(data).substr(i, piece), out);
  enc.finish(out);
  return out;
}

struct Decoded {
  std::string data;
  std::string error;
};

Decoded decompress(const std::string& gz, size_t in_piece, size_t out_piece) {
  GzipDecoder dec;
  Decoded d;
  std::string buf(out_piece, '\0');
  size_t i = 0;
  for (;;) {
    size_t produced = 0;
    auto st = dec.decode(buf.data(), buf.size(), produced);
    d.data.append(buf.data(), produced);
    if (st == GzipDecoder::Status::end) return d;
    if (st == GzipDecoder::Status::error) {
      d.error = dec.error_message();
      return d;
    }
    if (st == GzipDecoder::Status::need_input) {
      if (i >= gz.size()) {
        dec.finish();
      } else {
        size_t n = std::min(in_piece, gz.size() - i);
        dec.set_input(std::string_view(gz).substr(i, n));
        i += n;
      }
    }
  }
}

std::string sample(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() % 7 == 0 ? rng() & 0xff : 'a' + rng() % 4);
  return s;
}

TEST(Gzip, RoundTripInChunks) {
  std::string data = sample(1 << 20, 1);
  for (size_t wpiece : {1u, 4096u, 1u << 20}) {
    std::string gz = compress(data, wpiece == 1 ? 7 : wpiece);
    for (auto [in, out] : {std::pair<size_t, size_t>{1, 1}, {13, 4096}, {65536, 256 * 1024}, {1 << 22, 100}}) {
      if (in == 1 && out == 1 && wpiece != 4096) continue;  // byte by byte once is enough
      auto d = decompress(gz, in, out);
      EXPECT_EQ(d.error, "");
      EXPECT_TRUE(d.data == data) << "in " << in << " out " << out;
    }
  }
}

TEST(Gzip, EmptyPayload) {
  auto d = decompress(compress("", 1), 3, 10);
  EXPECT_EQ(d.error, "");
  EXPECT_EQ(d.data, "");
}

TEST(Gzip, OutputIsStandardGzip) {
  std::string data = sample(100000, 2);
  std::string gz = compress(data, 5000);
  ASSERT_GE(gz.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  std::string back(data.size(), '\0');
  uLongf len = back.size();
  // zlib's one-shot decoder (gzip via inflateInit2 with 16+MAX_WBITS).
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(gz.data());
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(back.data());
  z.avail_out = static_cast<uInt>(len);
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  inflateEnd(&z);
  EXPECT_TRUE(back == data);
}

TEST(Gzip, ConcatenatedMembers) {
  std::string gz = compress("hello ", 100) + compress("world", 100);
  for (size_t in : {1u, 5u, 1000u}) {
    auto d = decompress(gz, in, 3);
    EXPECT_EQ(d.error, "");
    EXPECT_EQ(d.data, "hello world");
  }
}

TEST(Gzip, Errors) {
  EXPECT_EQ(decompress("", 10, 10).error, "EOF");
  EXPECT_EQ(decompress("not gzip at all", 10, 10).error, "gzip: invalid header");
  std::string gz = compress(sample(10000, 3), 1000);
  EXPECT_EQ(decompress(gz.substr(0, 5), 10, 10).error, "unexpected EOF");         // inside the header
  EXPECT_EQ(decompress(gz.substr(0, gz.size() - 3), 10, 10).error, "unexpected EOF");  // inside the trailer
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 0x55;
  EXPECT_EQ(decompress(bad_crc, 100, 100).error, "gzip: invalid checksum");
  EXPECT_EQ(decompress(gz + "garbage", 100, 100).error, "gzip: invalid header");
  std::string corrupt = gz;
  for (size_t i = 12; i < 40; ++i) corrupt[i] = static_cast<char>(0xff);
  auto d = decompress(corrupt, 100, 100);
  EXPECT_NE(d.error, "");
}

TEST(Gzip, HeaderIsReadWithoutProducingOutput) {
  std::string gz = compress("payload", 100);
  GzipDecoder dec;
  size_t produced = 0;
  dec.set_input(std::string_view(gz).substr(0, 4));
  EXPECT_EQ(dec.decode(nullptr, 0, produced), GzipDecoder::Status::output);
  EXPECT_FALSE(dec.header_done());
  EXPECT_EQ(dec.decode(nullptr, 0, produced), GzipDecoder::Status::need_input);
  dec.set_input(std::string_view(gz).substr(4));
  dec.decode(nullptr, 0, produced);
  EXPECT_TRUE(dec.header_done());
  EXPECT_EQ(produced, 0u);
  std::string out(64, '\0');
  std::string got;
  for (;;) {
    auto st = dec.decode(out.data(), out.size(), produced);
    got.append(out.data(), produced);
    if (st == GzipDecoder::Status::need_input) dec.finish();
    if (st == GzipDecoder::Status::end || st == GzipDecoder::Status::error) break;
  }
  EXPECT_EQ(got, "payload");
}

}  // namespace
}  // namespace cove::files
