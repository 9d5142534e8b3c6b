// The one-shot Filesystem operations with envd's errors (envd.md §5), and EvalSymlinks.
#include <gtest/gtest.h>

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include "filesystem/eval_symlinks.hpp"
#include "system/go_errors.hpp"
#include "filesystem/operations.hpp"
#include "temp_dir.hpp"

using cove::filesystem::check_watch_path;
using cove::filesystem::EntryType;
using cove::filesystem::ErrorKind;
using cove::filesystem::eval_symlinks;
using cove::filesystem::EvalResult;
using cove::system::go_quote;
using cove::filesystem::list_dir;
using cove::filesystem::make_dir;
using cove::filesystem::move_entry;
using cove::filesystem::remove_all;
using cove::filesystem::stat_entry;
using cove::system::UserDatabase;
using cove::test::TempDir;

namespace {

std::string real(const std::string& p) {
  char buf[PATH_MAX];
  if (realpath(p.c_str(), buf) == nullptr) throw std::runtime_error("realpath " + p);
  return buf;
}

bool exists(const std::string& p) {
  struct stat st{};
  return lstat(p.c_str(), &st) == 0;
}

std::vector<std::string> names_of(const std::vector<cove::filesystem::EntryInfo>& entries, const std::string& base) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.path.substr(base.size() + 1));
  return out;
}

}  // namespace

TEST(FilesystemGoErrors, TextsAsGoPrintsThem) {
  EXPECT_EQ(cove::system::errno_text(ENOENT), "no such file or directory");
  EXPECT_EQ(cove::system::errno_text(EXDEV), "invalid cross-device link");
  EXPECT_EQ(cove::system::errno_text(ENOTEMPTY), "directory not empty");
  EXPECT_EQ(cove::system::path_error("lstat", "/x", ENOENT), "lstat /x: no such file or directory");
  EXPECT_EQ(cove::system::go_quote("/a b"), "\"/a b\"");
  EXPECT_EQ(cove::system::go_quote("q\"\\\n\x01\xff"), "\"q\\\"\\\\\\n\\x01\\xff\"");
  EXPECT_EQ(cove::system::go_quote("é"), "\"é\"");
}

TEST(FilesystemEvalSymlinks, ResolvesChainsRelativeAndAbsolute) {
  TempDir t;
  const std::string base = real(t.path());
  t.mkdir("a");
  t.mkdir("a/b");
  t.write("a/b/f", "");
  t.symlink("a/b", "rel");                 // relative
  t.symlink(base + "/a", "abs");           // absolute
  t.symlink("../rel/f", "a/up");           // relative with ..
  EXPECT_EQ(eval_symlinks(t / "rel").path, base + "/a/b");
  EXPECT_EQ(eval_symlinks(t / "abs/b/f").path, base + "/a/b/f");
  EXPECT_EQ(eval_symlinks(t / "a/up").path, base + "/a/b/f");
  EXPECT_EQ(eval_symlinks(t / "a/./b/../b//f").path, base + "/a/b/f");
  EXPECT_EQ(eval_symlinks("/").path, "/");
}

TEST(FilesystemEvalSymlinks, ErrorsAsGo) {
  TempDir t;
  t.write("file", "");
  t.symlink("l2", "l1");
  t.symlink("l1", "l2");
  t.symlink("missing", "dangling");

  auto missing = eval_symlinks(t / "no/such");
  EXPECT_EQ(missing.error, EvalResult::Error::not_exist);
  EXPECT_EQ(missing.message, "lstat " + t / "no" + ": no such file or directory");

  auto dangling = eval_symlinks(t / "dangling");
  EXPECT_EQ(dangling.error, EvalResult::Error::not_exist);
  EXPECT_EQ(dangling.message, "lstat " + real(t.path()) + "/missing: no such file or directory");

  auto loop = eval_symlinks(t / "l1");
  EXPECT_EQ(loop.error, EvalResult::Error::too_many_links);
  EXPECT_EQ(loop.message, "EvalSymlinks: too many links");

  auto notdir = eval_symlinks(t / "file/x");
  EXPECT_EQ(notdir.error, EvalResult::Error::other);
  EXPECT_EQ(notdir.message, "not a directory");
}

TEST(FilesystemOps, StatAndItsErrors) {
  TempDir t;
  t.write("f", "12345");
  UserDatabase users;
  auto ok = stat_entry(t / "f", users);
  ASSERT_TRUE(ok.ok()) << ok.error.message;
  EXPECT_EQ(ok.value.size, 5);
  EXPECT_EQ(ok.value.type, EntryType::file);

  auto missing = stat_entry(t / "nope", users);
  EXPECT_EQ(missing.error.kind, ErrorKind::not_found);
  EXPECT_EQ(missing.error.message, "file not found: lstat " + t / "nope" + ": no such file or directory");

  auto notdir = stat_entry(t / "f/x", users);
  EXPECT_EQ(notdir.error.kind, ErrorKind::internal);
  EXPECT_EQ(notdir.error.message, "error getting file info: lstat " + t / "f/x" + ": not a directory");
}

TEST(ListDir, DepthOneIsTheDefaultAndOrderIsLexicalDepthFirst) {
  TempDir t;
  t.mkdir("b");
  t.mkdir("b/inner");
  t.write("b/inner/deep", "");
  t.write("b/x", "");
  t.write("a", "");
  t.write("c", "");
  UserDatabase users;

  auto d0 = list_dir(t.path(), 0, users);
  ASSERT_TRUE(d0.ok()) << d0.error.message;
  EXPECT_EQ(names_of(d0.value, t.path()), (std::vector<std::string>{"a", "b", "c"}));

  auto d2 = list_dir(t.path(), 2, users);
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(names_of(d2.value, t.path()), (std::vector<std::string>{"a", "b", "b/inner", "b/x", "c"}));

  auto d9 = list_dir(t.path(), 9, users);
  ASSERT_TRUE(d9.ok());
  EXPECT_EQ(names_of(d9.value, t.path()),
            (std::vector<std::string>{"a", "b", "b/inner", "b/inner/deep", "b/x", "c"}));
  EXPECT_EQ(d9.value[3].name, "deep");
}

TEST(ListDir, SymlinksInsideAreNotFollowed) {
  TempDir t;
  t.mkdir("real");
  t.write("real/inside", "");
  t.symlink("real", "link");
  UserDatabase users;
  auto r = list_dir(t.path(), 5, users);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(names_of(r.value, t.path()), (std::vector<std::string>{"link", "real", "real/inside"}));
  EXPECT_EQ(r.value[0].type, EntryType::directory);  // the target's type...
  EXPECT_EQ(r.value[0].symlink_target, real(t / "real"));  // ...but not walked into
}

TEST(ListDir, RootThroughSymlinkKeepsRequestedBase) {
  TempDir t;
  t.mkdir("real");
  t.write("real/f", "");
  t.symlink("real", "link");
  UserDatabase users;
  auto r = list_dir(t / "link/", 1, users);
  ASSERT_TRUE(r.ok()) << r.error.message;
  ASSERT_EQ(r.value.size(), 1u);
  EXPECT_EQ(r.value[0].path, t / "link/f");
  EXPECT_EQ(r.value[0].name, "f");
}

TEST(ListDir, Errors) {
  TempDir t;
  t.write("file", "");
  t.symlink("l2", "l1");
  t.symlink("l1", "l2");
  UserDatabase users;

  auto missing = list_dir(t / "nope", 1, users);
  EXPECT_EQ(missing.error.kind, ErrorKind::not_found);
  EXPECT_EQ(missing.error.message, "path not found: lstat " + t / "nope" + ": no such file or directory");

  auto file = list_dir(t / "file", 1, users);
  EXPECT_EQ(file.error.kind, ErrorKind::invalid_argument);
  EXPECT_EQ(file.error.message, "path is not a directory: " + real(t / "file"));

  auto loop = list_dir(t / "l1", 1, users);
  EXPECT_EQ(loop.error.kind, ErrorKind::failed_precondition);
  EXPECT_EQ(loop.error.message, "cyclic symlink or chain >255 links at \"" + t / "l1" + "\"");
}

TEST(ListDir, UnreadableSubdirectoryFailsTheWholeCall) {
  TempDir t;
  t.mkdir("locked", 0);
  t.write("z", "");
  chmod(t.path().c_str(), 0755);  // the unprivileged child below must reach the entries
  // Root reads every directory, so the listing runs in a child as `nobody` (65534). Its exit
  // code says which expectation failed.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const gid_t nobody = 65534;
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setresgid(nobody, nobody, nobody) != 0 ||
                           setresuid(nobody, nobody, nobody) != 0)) {
      _exit(10);
    }
    UserDatabase users;
    if (!list_dir(t.path(), 1, users).ok()) _exit(11);  // the locked dir is at the depth limit: not read
    auto deep = list_dir(t.path(), 2, users);
    if (deep.error.kind != ErrorKind::internal) _exit(12);
    if (deep.error.message.find("permission denied") == std::string::npos) _exit(13);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: could not drop privileges, 11: depth-1 listing failed, "
                                       "12: depth-2 listing did not fail as internal, 13: wrong message";
  chmod((t / "locked").c_str(), 0755);
}

TEST(FilesystemOps, MakeDir) {
  TempDir t;
  t.write("file", "");
  UserDatabase users;
  auto made = make_dir(t / "x/y/z", getuid(), getgid(), users);
  ASSERT_TRUE(made.ok()) << made.error.message;
  EXPECT_EQ(made.value.type, EntryType::directory);
  EXPECT_EQ(made.value.name, "z");
  EXPECT_EQ(made.value.path, t / "x/y/z");
  struct stat st{};
  ASSERT_EQ(stat((t / "x").c_str(), &st), 0);  // parents too, owned by the user
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, getuid());

  auto again = make_dir(t / "x/y/z", getuid(), getgid(), users);
  EXPECT_EQ(again.error.kind, ErrorKind::already_exists);
  EXPECT_EQ(again.error.message, "directory already exists: " + t / "x/y/z");

  auto onfile = make_dir(t / "file", getuid(), getgid(), users);
  EXPECT_EQ(onfile.error.kind, ErrorKind::invalid_argument);
  EXPECT_EQ(onfile.error.message, "path already exists but it is not a directory");
}

TEST(FilesystemOps, MoveCreatesParentsAndReplaces) {
  TempDir t;
  t.write("src", "new");
  t.write("dst", "old");
  UserDatabase users;
  auto moved = move_entry(t / "src", t / "deep/er/file", getuid(), getgid(), users);
  ASSERT_TRUE(moved.ok()) << moved.error.message;
  EXPECT_EQ(moved.value.path, t / "deep/er/file");
  EXPECT_EQ(moved.value.size, 3);
  EXPECT_FALSE(exists(t / "src"));

  auto replaced = move_entry(t / "deep/er/file", t / "dst", getuid(), getgid(), users);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced.value.size, 3);

  auto missing = move_entry(t / "gone", t / "else", getuid(), getgid(), users);
  EXPECT_EQ(missing.error.kind, ErrorKind::not_found);
  EXPECT_EQ(missing.error.message,
            "source file not found: rename " + t / "gone" + " " + t / "else" + ": no such file or directory");

  t.mkdir("full");
  t.write("full/x", "");
  t.mkdir("dir");
  auto nonempty = move_entry(t / "dir", t / "full", getuid(), getgid(), users);
  EXPECT_EQ(nonempty.error.kind, ErrorKind::internal);
  EXPECT_EQ(nonempty.error.message.rfind("error renaming: rename ", 0), 0u) << nonempty.error.message;
}

TEST(FilesystemOps, RemoveIsRecursiveAndMissingIsSuccess) {
  TempDir t;
  t.mkdir("tree");
  t.mkdir("tree/sub");
  t.write("tree/sub/f", "");
  t.mkdir("keep");
  t.write("keep/k", "");
  t.symlink(t / "keep", "tree/link");  // removed as a link; its target survives
  EXPECT_TRUE(remove_all(t / "tree").ok());
  EXPECT_FALSE(exists(t / "tree"));
  EXPECT_TRUE(exists(t / "keep/k"));
  EXPECT_TRUE(remove_all(t / "never/was").ok());
  EXPECT_TRUE(remove_all(t / "keep/k").ok());
  EXPECT_FALSE(exists(t / "keep/k"));
  auto dot = remove_all(t / "keep/.");
  EXPECT_EQ(dot.kind, ErrorKind::internal);
  EXPECT_EQ(dot.message, "error removing file or directory: RemoveAll " + t / "keep/." + ": invalid argument");
}

TEST(FilesystemOps, WatchPathChecks) {
  TempDir t;
  t.write("file", "");
  EXPECT_TRUE(check_watch_path(t.path(), false).ok());
  auto missing = check_watch_path(t / "nope", false);
  EXPECT_EQ(missing.kind, ErrorKind::not_found);
  EXPECT_EQ(missing.message, "path " + t / "nope" + " not found: stat " + t / "nope" + ": no such file or directory");
  auto file = check_watch_path(t / "file", false);
  EXPECT_EQ(file.kind, ErrorKind::invalid_argument);
  EXPECT_TRUE(cove::filesystem::is_network_filesystem_magic(0x6969));
  EXPECT_TRUE(cove::filesystem::is_network_filesystem_magic(static_cast<long>(0xFF534D42u)));
  EXPECT_TRUE(cove::filesystem::is_network_filesystem_magic(0x517B));
  EXPECT_TRUE(cove::filesystem::is_network_filesystem_magic(static_cast<long>(0xFE534D42u)));
  EXPECT_TRUE(cove::filesystem::is_network_filesystem_magic(0x65735546));
  EXPECT_FALSE(cove::filesystem::is_network_filesystem_magic(0xEF53));  // ext4
}
