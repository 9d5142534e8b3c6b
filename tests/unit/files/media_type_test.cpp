// Media types, content types, HTTP dates and Go-style quoting used by the /files endpoints.
#include <gtest/gtest.h>

#include "files/content_type.hpp"
#include "files/http_date.hpp"
#include "files/media_type.hpp"
#include "system/go_errors.hpp"

namespace cove::files {
namespace {

TEST(FilesMediaType, Parse) {
  auto m = parse_media_type("multipart/form-data; boundary=----abc");
  EXPECT_TRUE(m.ok());
  EXPECT_EQ(m.type, "multipart/form-data");
  EXPECT_EQ(m.params.at("boundary"), "----abc");
  m = parse_media_type("Application/Octet-Stream");
  EXPECT_EQ(m.type, "application/octet-stream");
  m = parse_media_type("text/plain; charset=utf-8;");  // trailing semicolon tolerated
  EXPECT_TRUE(m.ok());
  m = parse_media_type("text/plain; charset");
  EXPECT_EQ(m.type, "text/plain");
  EXPECT_EQ(m.error, "mime: invalid media parameter");
  EXPECT_TRUE(m.params.empty());
  EXPECT_EQ(parse_media_type("").error, "mime: no media type");
  EXPECT_EQ(parse_media_type("text/").error, "mime: expected token after slash");
  EXPECT_EQ(parse_media_type("a; x=1; x=2").error, "mime: duplicate parameter name");
  EXPECT_TRUE(parse_media_type("a; x=1; X=1").ok());
}

TEST(FilesMediaType, FormatContentDisposition) {
  EXPECT_EQ(format_media_type("inline", {{"filename", "a.txt"}}), "inline; filename=a.txt");
  EXPECT_EQ(format_media_type("inline", {{"filename", "a b.txt"}}), "inline; filename=\"a b.txt\"");
  EXPECT_EQ(format_media_type("inline", {{"filename", "q\"b\\.txt"}}), "inline; filename=\"q\\\"b\\\\.txt\"");
  EXPECT_EQ(format_media_type("inline", {{"filename", "\xE2\x9C\x93 a%.txt"}}),
            "inline; filename*=utf-8''%E2%9C%93%20a%25.txt");
  auto back = parse_media_type(format_media_type("inline", {{"filename", "\xE2\x9C\x93 a%.txt"}}));
  EXPECT_EQ(back.params.at("filename"), "\xE2\x9C\x93 a%.txt");
}

TEST(FilesContentType, ByExtension) {
  EXPECT_EQ(content_type_by_extension("/home/user/a.txt"), "text/plain; charset=utf-8");
  EXPECT_EQ(content_type_by_extension("x.JSON"), "application/json");
  EXPECT_EQ(content_type_by_extension("dir.d/file"), "");
  EXPECT_EQ(content_type_by_extension("a.tar.gz"), "application/gzip");
  EXPECT_EQ(content_type_by_extension("p.png"), "image/png");
  EXPECT_EQ(content_type_by_extension("noext"), "");
}

TEST(FilesContentType, Sniff) {
  EXPECT_EQ(sniff_content_type(""), "text/plain; charset=utf-8");
  EXPECT_EQ(sniff_content_type("hello\nworld\t\r\n"), "text/plain; charset=utf-8");
  EXPECT_EQ(sniff_content_type(std::string("a\0b", 3)), "application/octet-stream");
  EXPECT_EQ(sniff_content_type("\x7f" "ELF\x02\x01\x01"), "application/octet-stream");
  EXPECT_EQ(sniff_content_type("  <!DOCTYPE html><html>"), "text/html; charset=utf-8");
  EXPECT_EQ(sniff_content_type("<?xml version=\"1.0\"?>"), "text/xml; charset=utf-8");
  EXPECT_EQ(sniff_content_type("%PDF-1.4"), "application/pdf");
  EXPECT_EQ(sniff_content_type("\x89PNG\r\n\x1a\n...."), "image/png");
  EXPECT_EQ(sniff_content_type("\x1f\x8b\x08\x00"), "application/x-gzip");
  EXPECT_EQ(sniff_content_type("PK\x03\x04"), "application/zip");
  // Only the first 512 bytes count.
  EXPECT_EQ(sniff_content_type(std::string(512, 'a') + std::string(1, '\0')), "text/plain; charset=utf-8");
}

TEST(FilesHttpDate, FormatAndParse) {
  EXPECT_EQ(format_http_date(1136214245), "Mon, 02 Jan 2006 15:04:05 GMT");
  EXPECT_EQ(parse_http_date("Mon, 02 Jan 2006 15:04:05 GMT"), 1136214245);
  EXPECT_EQ(parse_http_date("Monday, 02-Jan-06 15:04:05 GMT"), 1136214245);
  EXPECT_EQ(parse_http_date("Mon Jan  2 15:04:05 2006"), 1136214245);
  EXPECT_FALSE(parse_http_date("yesterday"));
  EXPECT_FALSE(parse_http_date("Mon, 02 Jan 2006 15:04:05 UTC"));
}

TEST(FilesQuote, GoStyle) {
  EXPECT_EQ(system::go_quote("a\"b\\c\r\n"), "\"a\\\"b\\\\c\\r\\n\"");
  EXPECT_EQ(system::go_quote("\xE2\x9C\x93\xff"), "\"\xE2\x9C\x93\\xff\"");
  EXPECT_EQ(system::errno_text(ENOSPC), "no space left on device");
}

}  // namespace
}  // namespace cove::files
