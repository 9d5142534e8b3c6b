#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/container/disk_image.hpp"
#include "runtime/container/host_files.hpp"

namespace cove::shim::container {
namespace {
struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/cove-disk-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() { remove_tree(path); }
};
}  // namespace

TEST(DiskImage, CopySparseKeepsHolesAndData) {
  ScratchDir dir;
  std::string from = dir.path + "/from", to = dir.path + "/to";
  int fd = open(from.c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 256 << 20), 0);
  ASSERT_EQ(pwrite(fd, "head", 4, 0), 4);
  ASSERT_EQ(pwrite(fd, "middle", 6, 100 << 20), 6);
  ASSERT_EQ(pwrite(fd, "tail", 4, (256 << 20) - 4), 4);
  close(fd);

  copy_sparse(from, to);
  struct stat st;
  ASSERT_EQ(stat(to.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 256 << 20);
  EXPECT_LT(st.st_blocks * 512, 1 << 20);  // holes stayed holes
  fd = open(to.c_str(), O_RDONLY);
  char buf[8] = {};
  EXPECT_EQ(pread(fd, buf, 4, 0), 4);
  EXPECT_EQ(std::string(buf, 4), "head");
  EXPECT_EQ(pread(fd, buf, 6, 100 << 20), 6);
  EXPECT_EQ(std::string(buf, 6), "middle");
  EXPECT_EQ(pread(fd, buf, 4, (256 << 20) - 4), 4);
  EXPECT_EQ(std::string(buf, 4), "tail");
  EXPECT_EQ(pread(fd, buf, 4, 50 << 20), 4);
  EXPECT_EQ(std::string(buf, 4), std::string(4, '\0'));
  close(fd);

  // Never over an existing file.
  EXPECT_THROW(copy_sparse(from, to), std::system_error);
}

TEST(DiskImage, CacheMakesOneEmptyFilesystemPerSize) {
  ScratchDir dir;
  DiskImageCache cache(dir.path + "/images");
  std::string a = cache.empty_image(32);
  EXPECT_EQ(cache.empty_image(32), a);
  struct stat st;
  ASSERT_EQ(stat(a.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 32 << 20);
  EXPECT_LT(st.st_blocks * 512, 4 << 20);
  // The ext4 magic 0xEF53 at offset 1024 + 56.
  int fd = open(a.c_str(), O_RDONLY);
  unsigned char magic[2] = {};
  EXPECT_EQ(pread(fd, magic, 2, 1024 + 56), 2);
  close(fd);
  EXPECT_EQ(magic[0], 0x53);
  EXPECT_EQ(magic[1], 0xEF);
  EXPECT_THROW(cache.empty_image(1), std::runtime_error);
}

TEST(HostFiles, RemoveTreeRemovesEverything) {
  ScratchDir dir;
  std::string root = dir.path + "/t";
  ASSERT_EQ(mkdir(root.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((root + "/a").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((root + "/a/b").c_str(), 0000), 0);
  close(open((root + "/a/f").c_str(), O_CREAT | O_WRONLY, 0600));
  ASSERT_EQ(symlink("/etc", (root + "/link").c_str()), 0);
  remove_tree(root);
  EXPECT_FALSE(exists(root));
  EXPECT_TRUE(exists("/etc/passwd"));  // the symlink was removed, not followed
  EXPECT_NO_THROW(remove_tree(root));  // missing is fine
}

}  // namespace cove::shim::container
