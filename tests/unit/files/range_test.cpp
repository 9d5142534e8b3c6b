// Range parsing (Go's ServeContent rules) and Accept-Encoding negotiation (envd's rules).
#include <gtest/gtest.h>

#include "files/range.hpp"

namespace cove::files {
namespace {

using Kind = RangeSpec::Kind;

TEST(Range, SingleRanges) {
  auto r = parse_range("bytes=0-9", 100);
  ASSERT_EQ(r.kind, Kind::ranges);
  ASSERT_EQ(r.ranges.size(), 1u);
  EXPECT_EQ(r.ranges[0].start, 0u);
  EXPECT_EQ(r.ranges[0].length, 10u);
  EXPECT_EQ(r.ranges[0].content_range(100), "bytes 0-9/100");

  r = parse_range("bytes=-5", 100);
  ASSERT_EQ(r.kind, Kind::ranges);
  EXPECT_EQ(r.ranges[0].start, 95u);
  EXPECT_EQ(r.ranges[0].length, 5u);

  r = parse_range("bytes=5-", 100);
  EXPECT_EQ(r.ranges[0].start, 5u);
  EXPECT_EQ(r.ranges[0].length, 95u);

  r = parse_range("bytes=90-200", 100);  // end clamped
  EXPECT_EQ(r.ranges[0].content_range(100), "bytes 90-99/100");

  r = parse_range("bytes=-500", 100);  // longer suffix than the file: all of it
  EXPECT_EQ(r.ranges[0].start, 0u);
  EXPECT_EQ(r.ranges[0].length, 100u);

  r = parse_range("bytes= 1 - 2 ", 100);  // spaces around the numbers are trimmed
  EXPECT_EQ(r.ranges[0].content_range(100), "bytes 1-2/100");
}

TEST(Range, NoHeaderOrEmptyList) {
  EXPECT_EQ(parse_range("", 10).kind, Kind::none);
  EXPECT_EQ(parse_range("bytes=", 10).kind, Kind::none);
  EXPECT_EQ(parse_range("bytes= , ", 10).kind, Kind::none);
}

TEST(Range, Invalid) {
  for (const char* h : {"items=0-1", "bytes=abc", "bytes=5", "bytes=--5", "bytes=-", "bytes=5-1", "bytes=-1-2",
                        "bytes=0-1,x", "bytes=-5a", "bytes=99999999999999999999-"}) {
    EXPECT_EQ(parse_range(h, 100).kind, Kind::invalid) << h;
  }
}

TEST(Range, Unsatisfiable) {
  EXPECT_EQ(parse_range("bytes=100-", 100).kind, Kind::no_overlap);
  EXPECT_EQ(parse_range("bytes=100-200,300-", 100).kind, Kind::no_overlap);
  EXPECT_EQ(parse_range("bytes=0-", 0).kind, Kind::no_overlap);
  EXPECT_EQ(parse_range("bytes=-0", 100).kind, Kind::no_overlap);  // an empty suffix
  EXPECT_EQ(parse_range("bytes=-5", 0).kind, Kind::no_overlap);
  // Unsatisfiable items are dropped when others remain.
  auto r = parse_range("bytes=200-300,0-0", 100);
  ASSERT_EQ(r.kind, Kind::ranges);
  ASSERT_EQ(r.ranges.size(), 1u);
  EXPECT_EQ(r.ranges[0].length, 1u);
}

TEST(Range, MultipleRangesAreReported) {
  auto r = parse_range("bytes=0-0,-1", 10);
  ASSERT_EQ(r.kind, Kind::ranges);
  EXPECT_EQ(r.ranges.size(), 2u);  // download.cpp answers these with the whole file
}

TEST(RangeAcceptEncoding, Negotiation) {
  auto pick = [](std::string_view h) { return negotiate_encoding(h); };
  EXPECT_EQ(pick("").encoding, Encoding::identity);
  EXPECT_EQ(pick("gzip").encoding, Encoding::gzip);
  EXPECT_EQ(pick("gzip, deflate, br").encoding, Encoding::gzip);
  EXPECT_EQ(pick("GZIP;q=0.5").encoding, Encoding::gzip);
  EXPECT_EQ(pick("deflate, br").encoding, Encoding::identity);  // identity is implicit
  EXPECT_EQ(pick("identity, gzip").encoding, Encoding::identity);  // equal q: first listed
  EXPECT_EQ(pick("identity;q=0.5, gzip").encoding, Encoding::gzip);
  EXPECT_EQ(pick("gzip;q=0").encoding, Encoding::identity);
  EXPECT_EQ(pick("*").encoding, Encoding::identity);
  EXPECT_EQ(pick("identity;q=0, *").encoding, Encoding::gzip);
  EXPECT_EQ(pick("gzip;q=bogus").encoding, Encoding::gzip);  // an unparsable q counts as 1
  EXPECT_TRUE(pick("identity;q=0, gzip").acceptable);
  EXPECT_FALSE(pick("identity;q=0, gzip").identity_acceptable);
}

TEST(RangeAcceptEncoding, NothingAcceptable) {
  EXPECT_FALSE(negotiate_encoding("identity;q=0").acceptable);
  EXPECT_FALSE(negotiate_encoding("*;q=0").acceptable);
  EXPECT_FALSE(negotiate_encoding("br, identity;q=0").acceptable);
  EXPECT_FALSE(negotiate_encoding("gzip;q=0, identity;q=0, *").acceptable);
  EXPECT_TRUE(negotiate_encoding("*;q=0, identity").acceptable);  // identity named explicitly
  EXPECT_TRUE(negotiate_encoding("*;q=0, gzip").acceptable);
  EXPECT_FALSE(negotiate_encoding("*;q=0, gzip").identity_acceptable);
}

TEST(RangeAcceptEncoding, RequestContentEncoding) {
  EXPECT_EQ(request_content_encoding(""), "");
  EXPECT_EQ(request_content_encoding("GZip"), "gzip");
  EXPECT_EQ(request_content_encoding(" identity ; q=1"), "identity");
}

}  // namespace
}  // namespace cove::files
