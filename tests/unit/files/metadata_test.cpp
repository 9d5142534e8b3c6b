// Upload metadata: header extraction, envd's validation messages, xattr replacement.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "files/metadata.hpp"

namespace cove::files {
namespace {

using Headers = std::vector<std::pair<std::string_view, std::string_view>>;

TEST(Metadata, FromHeaders) {
  Headers h{{"X-Access-Token", "t"},      {"X-Metadata-Author", "mish"}, {"x-metadata-PURPOSE", "upload"},
            {"Content-Type", "text/plain"}, {"X-Metadata-", "ignored"},  {"x-metadata-author", "second"}};
  Metadata m = metadata_from_headers(h);
  EXPECT_EQ(m, (Metadata{{"author", "mish"}, {"purpose", "upload"}}));
  EXPECT_TRUE(metadata_from_headers({}).empty());
}

TEST(Metadata, ValidationMessages) {
  EXPECT_EQ(validate_metadata({}), "");
  EXPECT_EQ(validate_metadata({{"k", "v with spaces ~"}}), "");
  EXPECT_EQ(validate_metadata({{"k", "tab\there"}}),
            "metadata value for key \"k\" contains non-printable-ASCII byte 0x09 at offset 3");
  EXPECT_EQ(validate_metadata({{"k\x7f", "v"}}), "metadata key contains non-printable-ASCII byte 0x7f at offset 1");
  EXPECT_EQ(validate_metadata({{"k", "caf\xc3\xa9"}}),
            "metadata value for key \"k\" contains non-printable-ASCII byte 0xc3 at offset 3");
  EXPECT_EQ(validate_metadata({{"", "v"}}), "metadata key must not be empty");
}

TEST(Metadata, KeyAndTotalLimits) {
  EXPECT_EQ(validate_metadata({{std::string(246, 'k'), "v"}}), "");
  std::string long_key(247, 'k');
  EXPECT_EQ(validate_metadata({{long_key, "v"}}), "metadata key \"" + long_key + "\" exceeds 246 bytes");
  // 9 + 1 + 4086 = 4096 fits; one byte more does not.
  EXPECT_EQ(validate_metadata({{"a", std::string(4086, 'v')}}), "");
  EXPECT_EQ(validate_metadata({{"a", std::string(4087, 'v')}}), "total metadata size 4097 exceeds 4096 bytes");
  EXPECT_EQ(validate_metadata({{"a", std::string(2038, 'v')}, {"b", std::string(2039, 'v')}}),
            "total metadata size 4097 exceeds 4096 bytes");
}

class MetadataXattr : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cove-meta-XXXXXX";
    fd_ = mkstemp(tmpl);
    ASSERT_GE(fd_, 0);
    path_ = tmpl;
    if (fsetxattr(fd_, "user.probe", "1", 1, 0) != 0) GTEST_SKIP() << "no user xattrs on /tmp";
    fremovexattr(fd_, "user.probe");
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    if (!path_.empty()) unlink(path_.c_str());
  }
  int fd_ = -1;
  std::string path_;
};

TEST_F(MetadataXattr, ReplaceWholeSetAndReadBack) {
  std::string error;
  ASSERT_EQ(replace_metadata(fd_, {{"a", "1"}, {"b", "2"}}, error), 0) << error;
  ASSERT_EQ(fsetxattr(fd_, "user.other", "keep", 4, 0), 0);
  EXPECT_EQ(read_metadata(fd_), (Metadata{{"a", "1"}, {"b", "2"}}));
  ASSERT_EQ(replace_metadata(fd_, {{"b", "3"}, {"c", ""}}, error), 0) << error;
  EXPECT_EQ(read_metadata(path_), (Metadata{{"b", "3"}, {"c", ""}}));
  ASSERT_EQ(replace_metadata(fd_, {}, error), 0) << error;  // no headers clears the set
  EXPECT_TRUE(read_metadata(fd_).empty());
  char buf[8];
  EXPECT_EQ(fgetxattr(fd_, "user.other", buf, sizeof buf), 4);  // other xattrs are not ours
}

TEST_F(MetadataXattr, NonUtf8EntriesAreSkipped) {
  ASSERT_EQ(fsetxattr(fd_, "user.e2b.bad", "\xff\xfe", 2, 0), 0);
  ASSERT_EQ(fsetxattr(fd_, "user.e2b.good", "ok", 2, 0), 0);
  EXPECT_EQ(read_metadata(fd_), (Metadata{{"good", "ok"}}));
}

}  // namespace
}  // namespace cove::files
