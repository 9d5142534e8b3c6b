#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "rootfs-builder/copy_step.hpp"
#include "test_files.hpp"

namespace cove::builder {
namespace {
namespace fs = std::filesystem;

// A context dir tarred (gzip) as the SDK does, a lower layer with users, and an empty new layer.
class CopyStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "ctx/assets");
    write(root_ / "ctx/hello.txt", "hello\n", 0644);
    write(root_ / "ctx/assets/data.txt", "data\n", 0600);
    write(root_ / "ctx/assets/run.sh", "#!/bin/sh\n", 0755);
    std::string cmd = "tar -C " + (root_ / "ctx").string() + " --format=ustar -czf " + (root_ / "ctx.tgz").string() +
                      " hello.txt assets";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    fs::create_directories(root_ / "lower/etc");
    fs::create_directories(root_ / "lower/home/user");
    write(root_ / "lower/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1001::/home/user:/bin/bash\n", 0644);
    ASSERT_EQ(chown((root_ / "lower/home/user").c_str(), 1000, 1001), 0);
    ASSERT_EQ(chmod((root_ / "lower/home/user").c_str(), 0700), 0);
    fs::create_directories(root_ / "layer");
  }

  static void write(const fs::path& p, const std::string& text, mode_t mode) {
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
  }
  CopyStep step(std::string src, std::string dest, std::string user = "", std::string mode = "") {
    return CopyStep{(root_ / "ctx.tgz").string(), std::move(src), std::move(dest), "", std::move(user), std::move(mode)};
  }
  CopyResult copy(const CopyStep& s) { return apply_copy(s, (root_ / "layer").string(), {(root_ / "lower").string()}); }
  struct stat stat_of(const std::string& rel) {
    struct stat st {};
    EXPECT_EQ(::lstat((root_ / "layer" / rel).c_str(), &st), 0) << rel;
    return st;
  }

  test::TempDir tmp_;
  fs::path root_{tmp_.path()};
};

TEST_F(CopyStepTest, AFileIntoADirectoryWithUserAndMode) {
  EXPECT_EQ(copy(step("hello.txt", "/app/", "user", "0755")).entries, 1u);
  auto st = stat_of("app/hello.txt");
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 1001u);
  // A new destination directory belongs to the step's user.
  EXPECT_EQ(stat_of("app").st_uid, 1000u);
}

TEST_F(CopyStepTest, AFileToAPathWithoutSlashIsThatFile) {
  copy(step("hello.txt", "/opt/renamed.txt"));
  EXPECT_TRUE(S_ISREG(stat_of("opt/renamed.txt").st_mode));
  EXPECT_EQ(stat_of("opt/renamed.txt").st_uid, 0u);
}

TEST_F(CopyStepTest, ADirectoryCopiesItsContentsWithArchivedModes) {
  EXPECT_EQ(copy(step("assets", "/app/assets")).entries, 2u);
  EXPECT_EQ(stat_of("app/assets/data.txt").st_mode & 07777, 0600u);
  EXPECT_EQ(stat_of("app/assets/run.sh").st_mode & 07777, 0755u);
  EXPECT_FALSE(fs::exists(root_ / "layer/app/assets/assets"));
}

TEST_F(CopyStepTest, ExistingDirectoriesBelowKeepTheirOwnerAndMode) {
  copy(step("hello.txt", "/home/user/notes/"));
  auto home = stat_of("home/user");
  EXPECT_EQ(home.st_uid, 1000u);
  EXPECT_EQ(home.st_mode & 07777, 0700u);
  EXPECT_EQ(stat_of("home").st_mode & 07777, 0755u);
}

TEST_F(CopyStepTest, RelativeDestinationsFollowTheWorkdirAndGlobsMatchTopLevelNames) {
  auto s = step("*.txt", "files/");
  s.workdir = "/srv";
  EXPECT_EQ(copy(s).entries, 1u);
  EXPECT_TRUE(fs::exists(root_ / "layer/srv/files/hello.txt"));
}

TEST_F(CopyStepTest, RefusesNoMatchAndUnknownUsers) {
  EXPECT_THROW(copy(step("missing.txt", "/x/")), std::runtime_error);
  EXPECT_THROW(copy(step("hello.txt", "/x/", "nobody-here")), std::runtime_error);
}

TEST_F(CopyStepTest, ResolvesNamesAndNumericIds) {
  std::vector<std::string> layers{(root_ / "lower").string()};
  EXPECT_EQ(resolve_user("user", layers)->uid, 1000u);
  EXPECT_EQ(resolve_user("user", layers)->gid, 1001u);
  EXPECT_EQ(resolve_user("42", layers)->gid, 42u);
  EXPECT_EQ(resolve_user("42:7", layers)->gid, 7u);
  EXPECT_FALSE(resolve_user("42:x", layers));
  EXPECT_FALSE(resolve_user("ghost", layers));
  EXPECT_EQ(resolve_user("", layers)->uid, 0u);
}

}  // namespace
}  // namespace cove::builder
