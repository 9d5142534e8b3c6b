// GET /files logic without sockets: errors, negotiation, ServeContent's validators and ranges,
// and bounded streaming (identity and gzip).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/time.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "files/download.hpp"
#include "files/http_date.hpp"

namespace cove::files {
namespace {

std::string header(const DownloadPlan& p, const std::string& name) {
  for (const auto& [k, v] : p.headers) {
    if (k == name) return v;
  }
  return "<absent>";
}

std::string body_of(DownloadPlan& plan, size_t* largest = nullptr) {
  DownloadStream s(plan);
  std::string out, piece;
  bool more = true;
  while (more) {
    more = s.next(piece);
    if (largest) *largest = std::max(*largest, piece.size());
    out += piece;
  }
  EXPECT_FALSE(s.failed());
  return out;
}

std::string gunzip(const std::string& gz) {
  z_stream z{};
  inflateInit2(&z, 16 + MAX_WBITS);
  std::string out(1 << 16, '\0'), result;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&z, Z_NO_FLUSH);
    result.append(out.data(), out.size() - z.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&z);
  EXPECT_EQ(rc, Z_STREAM_END);
  return result;
}

class Download : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cove-download-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    file_ = dir_ + "/data.txt";
    std::ofstream(file_, std::ios::binary) << "0123456789abcdefghij";
    // A fixed modification time: Mon, 02 Jan 2006 15:04:05 GMT (+0.5 s, truncated in headers).
    timeval tv[2] = {{1136214245, 500000}, {1136214245, 500000}};
    utimes(file_.c_str(), tv);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  DownloadRequest req(const std::string& path) {
    DownloadRequest r;
    r.raw_path = path;
    r.resolved_path = path;
    return r;
  }
  std::string dir_, file_;
};

TEST_F(Download, Errors) {
  auto p = plan_download(req(dir_ + "/missing"));
  EXPECT_EQ(p.status, 404u);
  EXPECT_TRUE(p.json_error);
  EXPECT_EQ(p.body, "path '" + dir_ + "/missing' does not exist");
  p = plan_download(req(dir_));
  EXPECT_EQ(p.status, 400u);
  EXPECT_EQ(p.body, "path '" + dir_ + "' is a directory");
  auto r = req(file_);
  r.accept_encoding = "identity;q=0";
  p = plan_download(r);
  EXPECT_EQ(p.status, 406u);
  EXPECT_EQ(p.body, "error parsing Accept-Encoding: no acceptable encoding found, supported: [gzip]");
  // Forced to identity by a Range while identity is refused.
  r.accept_encoding = "gzip, identity;q=0";
  r.range = "bytes=0-1";
  p = plan_download(r);
  EXPECT_EQ(p.status, 406u);
  EXPECT_EQ(header(p, "Vary"), "Accept-Encoding");
}

TEST_F(Download, IdentityWholeFile) {
  auto p = plan_download(req(file_));
  ASSERT_TRUE(p.stream);
  EXPECT_EQ(p.status, 200u);
  EXPECT_FALSE(p.gzip);
  EXPECT_EQ(p.length, 20u);
  EXPECT_EQ(p.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(header(p, "Vary"), "Accept-Encoding");
  EXPECT_EQ(header(p, "Accept-Ranges"), "bytes");
  EXPECT_EQ(header(p, "Last-Modified"), "Mon, 02 Jan 2006 15:04:05 GMT");
  EXPECT_EQ(header(p, "Content-Disposition"), "inline; filename=data.txt");
  EXPECT_EQ(header(p, "Content-Encoding"), "<absent>");
  EXPECT_EQ(body_of(p), "0123456789abcdefghij");
}

TEST_F(Download, ContentTypeSniffedWithoutKnownExtension) {
  std::string bin = dir_ + "/blob";
  std::ofstream(bin, std::ios::binary) << std::string("\x00\x01\x02", 3);
  EXPECT_EQ(plan_download(req(bin)).content_type, "application/octet-stream");
  std::string text = dir_ + "/notes";
  std::ofstream(text) << "plain words\n";
  EXPECT_EQ(plan_download(req(text)).content_type, "text/plain; charset=utf-8");
  // The extension of the raw path decides, not of the resolved one.
  auto r = req(text);
  r.raw_path = "notes.json";
  EXPECT_EQ(plan_download(r).content_type, "application/json");
}

TEST_F(Download, NonAsciiFilenameInDisposition) {
  std::string f = dir_ + "/\xC3\xA9t\xC3\xA9 1.txt";
  std::ofstream(f) << "x";
  EXPECT_EQ(header(plan_download(req(f)), "Content-Disposition"), "inline; filename*=utf-8''%C3%A9t%C3%A9%201.txt");
}

TEST_F(Download, Ranges) {
  auto r = req(file_);
  r.range = "bytes=2-4";
  auto p = plan_download(r);
  EXPECT_EQ(p.status, 206u);
  EXPECT_EQ(header(p, "Content-Range"), "bytes 2-4/20");
  EXPECT_EQ(p.length, 3u);
  EXPECT_EQ(body_of(p), "234");

  r.range = "bytes=-3";
  p = plan_download(r);
  EXPECT_EQ(body_of(p), "hij");

  r.range = "bytes=30-";
  p = plan_download(r);
  EXPECT_EQ(p.status, 416u);
  EXPECT_EQ(header(p, "Content-Range"), "bytes */20");
  EXPECT_EQ(p.body, "invalid range: failed to overlap\n");
  EXPECT_EQ(p.content_type, "text/plain; charset=utf-8");

  r.range = "bytes=x-y";
  p = plan_download(r);
  EXPECT_EQ(p.status, 416u);
  EXPECT_EQ(p.body, "invalid range\n");

  r.range = "bytes=0-1,5-6";  // several ranges: the whole file
  p = plan_download(r);
  EXPECT_EQ(p.status, 200u);
  EXPECT_EQ(header(p, "Content-Range"), "<absent>");
  EXPECT_EQ(body_of(p), "0123456789abcdefghij");

  // A Range forces identity even when gzip is preferred.
  r.range = "bytes=0-0";
  r.accept_encoding = "gzip";
  p = plan_download(r);
  EXPECT_EQ(p.status, 206u);
  EXPECT_FALSE(p.gzip);
}

TEST_F(Download, ConditionalRequests) {
  auto r = req(file_);
  r.if_modified_since = "Mon, 02 Jan 2006 15:04:05 GMT";  // equal (mtime truncated to seconds)
  auto p = plan_download(r);
  EXPECT_EQ(p.status, 304u);
  EXPECT_EQ(header(p, "Last-Modified"), "Mon, 02 Jan 2006 15:04:05 GMT");
  r.if_modified_since = "Mon, 02 Jan 2006 15:04:04 GMT";
  EXPECT_EQ(plan_download(r).status, 200u);

  r = req(file_);
  r.if_none_match = "*";
  EXPECT_EQ(plan_download(r).status, 304u);
  r.if_none_match = "\"abc\"";
  r.if_modified_since = "Mon, 02 Jan 2006 15:04:05 GMT";  // ignored when If-None-Match is present
  EXPECT_EQ(plan_download(r).status, 200u);

  r = req(file_);
  r.if_match = "\"abc\"";
  EXPECT_EQ(plan_download(r).status, 412u);
  r.if_match = "*";
  EXPECT_EQ(plan_download(r).status, 200u);
  r = req(file_);
  r.if_unmodified_since = "Mon, 02 Jan 2006 15:04:04 GMT";
  EXPECT_EQ(plan_download(r).status, 412u);

  r = req(file_);
  r.range = "bytes=0-0";
  r.if_range = "Mon, 02 Jan 2006 15:04:05 GMT";
  EXPECT_EQ(plan_download(r).status, 206u);
  r.if_range = "Mon, 02 Jan 2006 15:04:06 GMT";
  EXPECT_EQ(plan_download(r).status, 200u);
  r.if_range = "\"etag\"";
  EXPECT_EQ(plan_download(r).status, 200u);
}

TEST_F(Download, GzipStream) {
  std::string big = dir_ + "/big.bin";
  std::string content;
  for (long long i = 0; i < 300000; ++i) content += std::to_string(i * 7919 % 1000003) + ",";
  std::ofstream(big, std::ios::binary) << content;
  auto r = req(big);
  r.accept_encoding = "gzip, deflate";
  auto p = plan_download(r);
  ASSERT_TRUE(p.stream);
  EXPECT_TRUE(p.gzip);
  EXPECT_EQ(header(p, "Content-Encoding"), "gzip");
  EXPECT_EQ(p.content_type, "application/octet-stream");
  EXPECT_EQ(header(p, "Accept-Ranges"), "<absent>");
  size_t largest = 0;
  std::string gz = body_of(p, &largest);
  EXPECT_LT(gz.size(), content.size());
  EXPECT_LE(largest, DownloadStream::kReadChunk + 1024);
  EXPECT_TRUE(gunzip(gz) == content);

  r = req(file_);
  r.accept_encoding = "gzip";
  p = plan_download(r);
  EXPECT_EQ(p.content_type, "text/plain; charset=utf-8");  // by extension
  EXPECT_EQ(gunzip(body_of(p)), "0123456789abcdefghij");
}

TEST_F(Download, LargeIdentityStreamsInBoundedPieces) {
  std::string big = dir_ + "/big.raw";
  std::string content(3 * DownloadStream::kReadChunk + 123, 'q');
  std::ofstream(big, std::ios::binary) << content;
  auto p = plan_download(req(big));
  size_t largest = 0;
  EXPECT_TRUE(body_of(p, &largest) == content);
  EXPECT_EQ(largest, DownloadStream::kReadChunk);
}

TEST_F(Download, FileShrinkingUnderneathIsReported) {
  std::string f = dir_ + "/shrink";
  std::ofstream(f, std::ios::binary) << std::string(1 << 20, 'a');
  auto p = plan_download(req(f));
  ASSERT_TRUE(p.stream);
  ASSERT_EQ(truncate(f.c_str(), 1000), 0);
  DownloadStream s(p);
  std::string piece, got;
  while (s.next(piece)) got += piece;
  got += piece;
  EXPECT_TRUE(s.failed());
  EXPECT_TRUE(s.short_read());
  EXPECT_EQ(got.size(), 1000u);
}

TEST_F(Download, EmptyFile) {
  std::string f = dir_ + "/empty";
  std::ofstream(f) << "";
  auto p = plan_download(req(f));
  EXPECT_EQ(p.status, 200u);
  EXPECT_EQ(p.length, 0u);
  EXPECT_EQ(p.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(body_of(p), "");
}

}  // namespace
}  // namespace cove::files
