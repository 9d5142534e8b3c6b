// EntryInfo as envd builds it (envd.md §5) and Go's FileMode.String().
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

#include "filesystem/entry_info.hpp"
#include "temp_dir.hpp"

using cove::filesystem::base_name;
using cove::filesystem::EntryInfo;
using cove::filesystem::EntryType;
using cove::filesystem::entry_info;
using cove::filesystem::file_mode_string;
using cove::filesystem::go_file_mode;
using cove::system::UserDatabase;
using cove::test::TempDir;
namespace go_mode = cove::filesystem::go_mode;

namespace {

EntryInfo must_entry(const std::string& path, const UserDatabase& users) {
  int err = 0;
  auto e = entry_info(path, users, err);
  if (!e) throw std::runtime_error("entry_info failed: errno " + std::to_string(err));
  return *e;
}

}  // namespace

TEST(FileMode, EveryTypeBitInGoOrder) {
  // Each bit alone with 0644, expected per Go's "dalTLDpSugct?".
  const std::pair<uint32_t, const char*> cases[] = {
      {0, "-rw-r--r--"},
      {go_mode::dir, "drw-r--r--"},
      {go_mode::append, "arw-r--r--"},
      {go_mode::exclusive, "lrw-r--r--"},
      {go_mode::temporary, "Trw-r--r--"},
      {go_mode::symlink, "Lrw-r--r--"},
      {go_mode::device, "Drw-r--r--"},
      {go_mode::named_pipe, "prw-r--r--"},
      {go_mode::socket, "Srw-r--r--"},
      {go_mode::setuid, "urw-r--r--"},
      {go_mode::setgid, "grw-r--r--"},
      {go_mode::char_device, "crw-r--r--"},
      {go_mode::sticky, "trw-r--r--"},
      {go_mode::irregular, "?rw-r--r--"},
  };
  for (const auto& [bits, want] : cases) EXPECT_EQ(file_mode_string(bits | 0644), want) << std::hex << bits;
  EXPECT_EQ(file_mode_string(0xFFF80000u | 0777), "dalTLDpSugct?rwxrwxrwx");
  EXPECT_EQ(file_mode_string(0), "----------");
}

TEST(FileMode, PermissionBitsEachPosition) {
  const char* want[] = {"---------x", "--------w-", "-------r--", "------x---", "-----w----",
                        "----r-----", "---x------", "--w-------", "-r--------"};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(file_mode_string(1u << i), want[i]);
}

TEST(FileMode, FromStatModeAsGoConvertsIt) {
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFREG | 0644)), "-rw-r--r--");
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFDIR | 0755)), "drwxr-xr-x");
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFLNK | 0777)), "Lrwxrwxrwx");
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFDIR | S_ISVTX | 0777)), "dtrwxrwxrwx");  // /tmp
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFREG | S_ISUID | 0755)), "urwxr-xr-x");
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFREG | S_ISGID | 0755)), "grwxr-xr-x");
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFREG | S_ISUID | S_ISGID | S_ISVTX | 0755)), "ugtrwxr-xr-x");
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFCHR | 0666)), "Dcrw-rw-rw-");  // /dev/null
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFBLK | 0660)), "Drw-rw----");
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFIFO | 0644)), "prw-r--r--");
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFSOCK | 0755)), "Srwxr-xr-x");
  EXPECT_EQ(file_mode_string(go_file_mode(S_IFDIR | S_ISGID | 02775)), "dgrwxrwxr-x");
}

TEST(FileMode, BaseNameMatchesGoFilepathBase) {
  EXPECT_EQ(base_name(""), ".");
  EXPECT_EQ(base_name("/"), "/");
  EXPECT_EQ(base_name("///"), "/");
  EXPECT_EQ(base_name("/a/b"), "b");
  EXPECT_EQ(base_name("/a/b/"), "b");
  EXPECT_EQ(base_name("b"), "b");
}

TEST(EntryInfo, RegularFile) {
  TempDir t;
  t.write("f.txt", "hello");
  chmod((t / "f.txt").c_str(), 0640);
  UserDatabase users;
  auto e = must_entry(t / "f.txt", users);
  EXPECT_EQ(e.name, "f.txt");
  EXPECT_EQ(e.path, t / "f.txt");
  EXPECT_EQ(e.type, EntryType::file);
  EXPECT_EQ(e.size, 5);
  EXPECT_EQ(e.mode, 0640u);
  EXPECT_EQ(e.permissions, "-rw-r-----");
  EXPECT_EQ(e.owner, users.user_name(getuid()));
  EXPECT_EQ(e.group, users.group_name(getgid()));
  EXPECT_FALSE(e.symlink_target.has_value());
  ASSERT_TRUE(e.modified_time.has_value());
  struct stat st{};
  ASSERT_EQ(stat((t / "f.txt").c_str(), &st), 0);
  EXPECT_EQ(e.modified_time->seconds, st.st_mtim.tv_sec);
  EXPECT_EQ(e.modified_time->nanos, st.st_mtim.tv_nsec);
}

TEST(EntryInfo, ZeroMtimeIsOmitted) {
  TempDir t;
  t.write("old", "");
  const struct timespec zero[2] = {{0, 0}, {0, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, (t / "old").c_str(), zero, 0), 0);
  UserDatabase users;
  EXPECT_FALSE(must_entry(t / "old", users).modified_time.has_value());
}

TEST(EntryInfo, DirectoryWithSetuidBitsMaskedFromMode) {
  TempDir t;
  t.mkdir("d");
  chmod((t / "d").c_str(), 01777);
  UserDatabase users;
  auto e = must_entry(t / "d", users);
  EXPECT_EQ(e.type, EntryType::directory);
  EXPECT_EQ(e.mode, 0777u);  // sticky not included
  EXPECT_EQ(e.permissions, "dtrwxrwxrwx");
  EXPECT_EQ(e.name, "d");
}

TEST(EntryInfo, SymlinkReportsTargetTypeAndResolvedPath) {
  TempDir t;
  t.mkdir("real");
  t.write("real/f", "abc");
  chmod((t / "real/f").c_str(), 0600);
  t.symlink("real", "dirlink");
  t.symlink("dirlink/f", "filelink");  // a chain: filelink -> dirlink/f -> real/f
  UserDatabase users;

  auto f = must_entry(t / "filelink", users);
  EXPECT_EQ(f.type, EntryType::file);
  EXPECT_EQ(f.mode, 0600u);                  // the target's permission bits
  EXPECT_EQ(f.permissions, "Lrwxrwxrwx");    // the link's own lstat mode
  EXPECT_EQ(f.size, 9);                      // length of "dirlink/f"
  char real[PATH_MAX];
  ASSERT_NE(realpath((t / "real/f").c_str(), real), nullptr);
  EXPECT_EQ(f.symlink_target, std::string(real));

  auto d = must_entry(t / "dirlink", users);
  EXPECT_EQ(d.type, EntryType::directory);
  EXPECT_EQ(d.mode, 0755u);
}

TEST(EntryInfo, DanglingAndLoopingSymlinksNameThemselves) {
  TempDir t;
  t.symlink("missing", "dangling");
  t.symlink("loop2", "loop1");
  t.symlink("loop1", "loop2");
  UserDatabase users;
  for (const char* name : {"dangling", "loop1"}) {
    auto e = must_entry(t / name, users);
    EXPECT_EQ(e.type, EntryType::unspecified) << name;
    EXPECT_EQ(e.mode, 0u) << name;
    EXPECT_EQ(e.permissions, "Lrwxrwxrwx") << name;
    EXPECT_EQ(e.symlink_target, t / name) << name;
  }
}

TEST(EntryInfo, FifoIsUnspecified) {
  TempDir t;
  ASSERT_EQ(mkfifo((t / "p").c_str(), 0644), 0);
  UserDatabase users;
  auto e = must_entry(t / "p", users);
  EXPECT_EQ(e.type, EntryType::unspecified);
  EXPECT_EQ(e.mode, 0644u);
  EXPECT_EQ(e.permissions, "prw-r--r--");
}

TEST(EntryInfo, CharDeviceIsUnspecified) {
  UserDatabase users;
  auto e = must_entry("/dev/null", users);
  EXPECT_EQ(e.type, EntryType::unspecified);
  EXPECT_EQ(e.permissions, "Dcrw-rw-rw-");
  EXPECT_EQ(e.name, "null");
}

TEST(EntryInfo, OwnerFallsBackToNumbers) {
  TempDir t;
  t.write("f", "");
  TempDir empty_etc;  // no passwd or group files
  UserDatabase users(empty_etc.path());
  auto e = must_entry(t / "f", users);
  EXPECT_EQ(e.owner, std::to_string(getuid()));
  EXPECT_EQ(e.group, std::to_string(getgid()));
}

TEST(EntryInfo, MetadataFromUserE2bXattrs) {
  TempDir t;
  t.write("f", "");
  const std::string p = t / "f";
  if (setxattr(p.c_str(), "user.e2b.color", "blue", 4, 0) != 0) {
    GTEST_SKIP() << "no user xattrs here: errno " << errno;
  }
  ASSERT_EQ(setxattr(p.c_str(), "user.other", "x", 1, 0), 0);          // another namespace prefix
  ASSERT_EQ(setxattr(p.c_str(), "user.e2b.bad", "\xff\xfe", 2, 0), 0);  // not UTF-8: skipped
  ASSERT_EQ(setxattr(p.c_str(), "user.e2b.empty", "", 0, 0), 0);
  UserDatabase users;
  auto e = must_entry(p, users);
  const std::map<std::string, std::string> want{{"color", "blue"}, {"empty", ""}};
  EXPECT_EQ(e.metadata, want);
}

TEST(EntryInfo, MissingPathGivesErrno) {
  TempDir t;
  UserDatabase users;
  int err = 0;
  EXPECT_FALSE(entry_info(t / "nope", users, err).has_value());
  EXPECT_EQ(err, ENOENT);
}
