// The incremental multipart parser: identical results whatever the chunking, Go's boundary rules,
// limits, and robustness against arbitrary input.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "files/multipart.hpp"

namespace cove::files {
namespace {

using Event = MultipartParser::Event;

struct Part {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string data;
  bool ended = false;
};

struct Outcome {
  std::vector<Part> parts;
  bool done = false;
  bool error = false;
  bool error_in_body = false;
  std::string message;
  size_t largest_data_event = 0;
};

bool drain(MultipartParser& p, Outcome& out) {
  for (;;) {
    switch (p.next()) {
      case Event::need_more: return true;
      case Event::part_begin: out.parts.push_back({p.headers().fields(), {}, false}); break;
      case Event::part_data:
        if (out.parts.empty()) ADD_FAILURE() << "data before any part";
        else out.parts.back().data.append(p.data());
        out.largest_data_event = std::max(out.largest_data_event, p.data().size());
        break;
      case Event::part_end:
        if (out.parts.empty()) ADD_FAILURE() << "end before any part";
        else out.parts.back().ended = true;
        break;
      case Event::done: out.done = true; return false;
      case Event::error:
        out.error = true;
        out.message = p.error_message();
        out.error_in_body = p.error_in_body();
        return false;
    }
  }
}

// Feeds `body` in pieces of the given sizes (cycled), then finishes.
Outcome parse(const std::string& boundary, const std::string& body, const std::vector<size_t>& sizes,
              MultipartParser::Limits limits = {}) {
  MultipartParser p(boundary, limits);
  Outcome out;
  size_t i = 0, k = 0;
  bool go = true;
  while (go && i < body.size()) {
    size_t n = std::min(sizes[k++ % sizes.size()], body.size() - i);
    p.feed(std::string_view(body).substr(i, n));
    i += n;
    go = drain(p, out);
  }
  if (go) {
    p.finish();
    drain(p, out);
  }
  return out;
}

Outcome parse_whole(const std::string& boundary, const std::string& body, MultipartParser::Limits limits = {}) {
  return parse(boundary, body, {std::max<size_t>(body.size(), 1)}, limits);
}

std::vector<size_t> random_sizes(unsigned seed, size_t max) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> d(1, max);
  std::vector<size_t> v(64);
  for (auto& s : v) s = d(rng);
  return v;
}

void expect_same(const Outcome& a, const Outcome& b) {
  ASSERT_EQ(a.parts.size(), b.parts.size());
  for (size_t i = 0; i < a.parts.size(); ++i) {
    EXPECT_EQ(a.parts[i].headers, b.parts[i].headers) << "part " << i;
    EXPECT_EQ(a.parts[i].data, b.parts[i].data) << "part " << i;
    EXPECT_EQ(a.parts[i].ended, b.parts[i].ended) << "part " << i;
  }
  EXPECT_EQ(a.done, b.done);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.message, b.message);
}

const std::string kBody =
    "preamble line\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a.txt\"\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "hello\r\n--XyZZ not a delimiter\r\n--XyZ-x still data\r\nworld\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"note\"\r\n"
    "\r\n"
    "\r\n"
    "--XyZ--\r\n"
    "epilogue ignored --XyZ\r\n";

TEST(MultipartParser, ParsesPartsHeadersAndBodies) {
  Outcome out = parse_whole("XyZ", kBody);
  ASSERT_TRUE(out.done) << out.message;
  ASSERT_EQ(out.parts.size(), 2u);
  EXPECT_EQ(out.parts[0].headers[0].first, "Content-Disposition");
  EXPECT_EQ(out.parts[0].headers[1], (std::pair<std::string, std::string>{"Content-Type", "text/plain"}));
  EXPECT_EQ(out.parts[0].data, "hello\r\n--XyZZ not a delimiter\r\n--XyZ-x still data\r\nworld");
  EXPECT_TRUE(out.parts[0].ended);
  EXPECT_EQ(out.parts[1].data, "");  // the CRLF after the blank line belongs to the delimiter
  EXPECT_TRUE(out.parts[1].ended);
}

TEST(MultipartParser, ByteByByteMatchesWhole) {
  expect_same(parse_whole("XyZ", kBody), parse("XyZ", kBody, {1}));
}

TEST(MultipartParser, RandomChunksMatchWhole) {
  auto whole = parse_whole("XyZ", kBody);
  for (unsigned seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE(seed);
    expect_same(whole, parse("XyZ", kBody, random_sizes(seed, 17)));
  }
}

TEST(MultipartParser, ZeroParts) {
  auto out = parse_whole("b", "--b--\r\n");
  EXPECT_TRUE(out.done);
  EXPECT_TRUE(out.parts.empty());
  out = parse_whole("b", "--b--");  // no newline at the very end
  EXPECT_TRUE(out.done);
}

TEST(MultipartParser, EmptyBodyIsGoNextPartEof) {
  auto out = parse_whole("b", "");
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "multipart: NextPart: EOF");
  EXPECT_FALSE(out.error_in_body);
}

TEST(MultipartParser, EmptyBoundary) {
  auto out = parse_whole("", "----\r\n");
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "multipart: boundary is empty");
}

TEST(MultipartParser, TruncatedInsideBodyAndDelimiter) {
  const std::string head = "--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc";
  for (const std::string& tail : {std::string(""), std::string("\r"), std::string("\r\n-"), std::string("\r\n--")}) {
    auto out = parse_whole("b", head + tail);
    EXPECT_TRUE(out.error) << tail;
    EXPECT_TRUE(out.error_in_body) << tail;
    EXPECT_EQ(out.message, "unexpected EOF");
    ASSERT_EQ(out.parts.size(), 1u);
    EXPECT_FALSE(out.parts[0].ended);
  }
}

TEST(MultipartParser, TruncatedAfterDelimiter) {
  // The delimiter ends the body, but no closing "--" follows.
  auto out = parse_whole("b", "--b\r\n\r\nabc\r\n--b");
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "multipart: NextPart: EOF");
  ASSERT_EQ(out.parts.size(), 1u);
  EXPECT_TRUE(out.parts[0].ended);
  EXPECT_EQ(out.parts[0].data, "abc");
  // A new part begins, and the input ends in its headers.
  out = parse_whole("b", "--b\r\n\r\nabc\r\n--b\r\nContent-Type: x");
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "unexpected EOF");
  EXPECT_FALSE(out.error_in_body);
}

TEST(MultipartParser, GarbageAfterDelimiter) {
  auto out = parse_whole("b", "--b\r\n\r\nabc\r\n--b  junk\r\n");
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "multipart: expecting a new Part; got line \"--b  junk\\r\\n\"");
}

TEST(MultipartParser, TransportPaddingAfterDelimiter) {
  auto out = parse_whole("b", "--b \t\r\n\r\nabc\r\n--b\t\r\n\r\ndef\r\n--b-- \r\n");
  ASSERT_TRUE(out.done) << out.message;
  ASSERT_EQ(out.parts.size(), 2u);
  EXPECT_EQ(out.parts[0].data, "abc");
  EXPECT_EQ(out.parts[1].data, "def");
}

TEST(MultipartParser, LfOnlyBody) {
  const std::string body = "--b\nContent-Disposition: form-data; name=\"file\"\n\nline1\r\nline2\n--b\n\nx\n--b--\n";
  auto out = parse_whole("b", body);
  ASSERT_TRUE(out.done) << out.message;
  ASSERT_EQ(out.parts.size(), 2u);
  EXPECT_EQ(out.parts[0].data, "line1\r\nline2");
  EXPECT_EQ(out.parts[1].data, "x");
  expect_same(out, parse("b", body, {1}));
}

TEST(MultipartParser, EmptyBodyWithoutLeadingNewline) {
  // The header block's blank line directly followed by the delimiter (Go accepts this).
  auto out = parse_whole("b", "--b\r\nA: 1\r\n\r\n--b\r\n\r\nz\r\n--b--\r\n");
  ASSERT_TRUE(out.done) << out.message;
  ASSERT_EQ(out.parts.size(), 2u);
  EXPECT_EQ(out.parts[0].data, "");
  EXPECT_TRUE(out.parts[0].ended);
  EXPECT_EQ(out.parts[1].data, "z");
}

TEST(MultipartParser, HeaderFoldingAndCanonicalNames) {
  auto out = parse_whole("b", "--b\r\ncontent-disposition: form-data;\r\n  name=\"file\"\r\nx-custom-HEADER:  v \r\n\r\n\r\n--b--\r\n");
  ASSERT_TRUE(out.done) << out.message;
  ASSERT_EQ(out.parts.size(), 1u);
  ASSERT_EQ(out.parts[0].headers.size(), 2u);
  EXPECT_EQ(out.parts[0].headers[0].first, "Content-Disposition");
  EXPECT_EQ(out.parts[0].headers[0].second, "form-data; name=\"file\"");
  EXPECT_EQ(out.parts[0].headers[1].first, "X-Custom-Header");
  EXPECT_EQ(out.parts[0].headers[1].second, "v");
}

TEST(MultipartParser, MalformedHeaderLine) {
  auto out = parse_whole("b", "--b\r\nno colon here\r\n\r\n\r\n--b--\r\n");
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "malformed MIME header line: no colon here");
  out = parse_whole("b", "--b\r\n leading: space\r\n\r\n\r\n--b--\r\n");
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "malformed MIME header initial line:  leading: space");
}

TEST(MultipartParser, HugePartHeadersAreRefused) {
  MultipartParser::Limits limits;
  limits.max_header_bytes = 1024;
  std::string body = "--b\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n\r\n--b--\r\n";
  auto out = parse_whole("b", body, limits);
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "multipart: message too large");
  // Also when the headers never end (no newline at all) and arrive byte by byte.
  body = "--b\r\n" + std::string(100000, 'h');
  out = parse("b", body, {1}, limits);
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "multipart: message too large");
}

TEST(MultipartParser, TooManyHeaderFields) {
  MultipartParser::Limits limits;
  limits.max_header_fields = 3;
  auto out = parse_whole("b", "--b\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n\r\n--b--\r\n", limits);
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "multipart: message too large");
}

TEST(MultipartParser, LongPreambleLinesAreSkippedWithBoundedMemory) {
  MultipartParser::Limits limits;
  limits.max_header_bytes = 100;
  std::string body = std::string(10000, 'p') + "\r\n--b\r\n\r\nok\r\n--b--";
  auto out = parse("b", body, {7}, limits);
  ASSERT_TRUE(out.done) << out.message;
  ASSERT_EQ(out.parts.size(), 1u);
  EXPECT_EQ(out.parts[0].data, "ok");
}

TEST(MultipartParser, ThousandParts) {
  std::string body;
  for (int i = 0; i < 1000; ++i) {
    body += "--bnd\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f" + std::to_string(i) + "\"\r\n\r\n";
    body += "content " + std::to_string(i) + "\r\n";
  }
  body += "--bnd--\r\n";
  auto out = parse("bnd", body, random_sizes(7, 300));
  ASSERT_TRUE(out.done) << out.message;
  ASSERT_EQ(out.parts.size(), 1000u);
  EXPECT_EQ(out.parts[999].data, "content 999");
  MultipartParser::Limits limits;
  limits.max_parts = 999;
  out = parse_whole("bnd", body, limits);
  EXPECT_TRUE(out.error);
  EXPECT_EQ(out.message, "multipart: too many parts");
}

TEST(MultipartParser, LargeBodyStreamsInPiecesNoLargerThanFed) {
  std::string payload(3 << 20, 'x');
  for (size_t i = 0; i < payload.size(); i += 997) payload[i] = '\r';
  std::string body = "--b\r\n\r\n" + payload + "\r\n--b--\r\n";
  auto out = parse("b", body, {65536});
  ASSERT_TRUE(out.done) << out.message;
  ASSERT_EQ(out.parts.size(), 1u);
  EXPECT_EQ(out.parts[0].data, payload);
  EXPECT_LE(out.largest_data_event, 65536u);
}

TEST(MultipartParser, InputAfterDoneIsIgnored) {
  MultipartParser p("b");
  p.feed("--b--\r\n");
  EXPECT_EQ(p.next(), Event::done);
  p.feed("--b\r\n\r\nmore\r\n--b--");
  EXPECT_EQ(p.next(), Event::done);
  p.finish();
  EXPECT_EQ(p.next(), Event::done);
}

TEST(MultipartParser, ArbitraryBytesNeverCrash) {
  std::mt19937 rng(12345);
  const std::string alphabet = "-b\r\n :;=\"ax\t";
  for (int iter = 0; iter < 3000; ++iter) {
    std::string body;
    size_t len = rng() % 200;
    for (size_t i = 0; i < len; ++i) {
      body += (rng() % 4 == 0) ? static_cast<char>(rng() & 0xff) : alphabet[rng() % alphabet.size()];
    }
    if (iter % 3 == 0) body = "--b\r\n" + body;
    MultipartParser::Limits limits;
    limits.max_header_bytes = 64;
    limits.max_parts = 8;
    auto out = parse("b", body, random_sizes(static_cast<unsigned>(iter), 9), limits);
    EXPECT_TRUE(out.done || out.error);
  }
}

// ---- Content-Disposition of a part ----

PartHeaders with_disposition(const std::string& value) {
  PartHeaders h;
  h.add("Content-Disposition", value);
  return h;
}

TEST(MultipartParser, FilenameWithSlashesIsKeptWhole) {
  auto d = describe_part(with_disposition("form-data; name=\"file\"; filename=\"/home/user/dir/a.txt\""));
  EXPECT_EQ(d.form_name, "file");
  ASSERT_TRUE(d.filename);
  EXPECT_EQ(*d.filename, "/home/user/dir/a.txt");
  d = describe_part(with_disposition("form-data; name=file; filename=\"rel/b.txt\""));
  ASSERT_TRUE(d.filename);
  EXPECT_EQ(*d.filename, "rel/b.txt");
  // Unquoted, '/' is not a token character: the parameter list is invalid (as in Go).
  d = describe_part(with_disposition("form-data; name=file; filename=rel/b.txt"));
  EXPECT_FALSE(d.filename);
  EXPECT_EQ(d.filename_error, "mime: invalid media parameter");
}

TEST(MultipartParser, QuotedAndEscapedFilenames) {
  auto d = describe_part(with_disposition(R"(form-data; name="file"; filename="a\"b.txt")"));
  EXPECT_EQ(*d.filename, "a\"b.txt");
  // A backslash before a non-special character is kept (browsers send Windows paths raw).
  d = describe_part(with_disposition(R"(form-data; name="file"; filename="C:\dir\f.txt")"));
  EXPECT_EQ(*d.filename, R"(C:\dir\f.txt)");
  d = describe_part(with_disposition("form-data; name=\"file\"; filename=\"with space; and=semi\""));
  EXPECT_EQ(*d.filename, "with space; and=semi");
  d = describe_part(with_disposition("form-data; name=\"file\"; filename=\"\""));
  ASSERT_TRUE(d.filename);
  EXPECT_EQ(*d.filename, "");
}

TEST(MultipartParser, Rfc2231Filenames) {
  auto d = describe_part(with_disposition("form-data; name=\"file\"; filename=\"plain\"; filename*=UTF-8''%E2%9C%93%20x.txt"));
  EXPECT_EQ(*d.filename, "\xE2\x9C\x93 x.txt");
  d = describe_part(with_disposition("form-data; name=\"file\"; filename*0*=utf-8''a%20; filename*1=\"b\"; filename*2*=%41"));
  EXPECT_EQ(*d.filename, "a bA");
}

TEST(MultipartParser, PartsThatAreNotFiles) {
  auto d = describe_part(with_disposition("attachment; name=\"file\"; filename=\"x\""));
  EXPECT_EQ(d.form_name, "");  // only form-data has a form name
  d = describe_part(PartHeaders{});
  EXPECT_EQ(d.form_name, "");
  d = describe_part(with_disposition("form-data; name=\"file\""));
  EXPECT_EQ(d.form_name, "file");
  EXPECT_FALSE(d.filename);
  EXPECT_EQ(d.filename_error, "filename not found in Content-Disposition header");
  d = describe_part(with_disposition("form-data; name=\"file\"; filename=\"unterminated"));
  EXPECT_EQ(d.form_name, "");
  EXPECT_EQ(d.filename_error, "mime: invalid media parameter");
}

}  // namespace
}  // namespace cove::files
