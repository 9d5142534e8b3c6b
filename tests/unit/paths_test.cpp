// Go filepath.Clean and envd's ExpandAndResolve (envd.md §2).
#include <gtest/gtest.h>

#include "system/paths.hpp"

using cove::system::clean_path;
using cove::system::resolve_path;
using cove::system::User;

TEST(CleanPath, MatchesGoFilepathClean) {
  // Expected values are what Go's filepath.Clean returns on Linux.
  const std::pair<const char*, const char*> cases[] = {
      {"", "."},
      {".", "."},
      {"./", "."},
      {"..", ".."},
      {"a/../..", ".."},
      {"a/b/../../..", ".."},
      {"../../a", "../../a"},
      {"../a/../b", "../b"},
      {"/..", "/"},
      {"/../x", "/x"},
      {"/../../x/../y", "/y"},
      {"//a//b/", "/a/b"},
      {"a/./b/", "a/b"},
      {"/", "/"},
      {"//", "/"},
      {"abc", "abc"},
      {"abc/def/", "abc/def"},
      {"a/b/c/./../../g", "a/g"},
      {"/a/b/../c/./d", "/a/c/d"},
      {"a/..", "."},
      {"/a/..", "/"},
      {"...", "..."},
      {"a/.../b", "a/.../b"},
      {".hidden/./x", ".hidden/x"},
  };
  for (const auto& [in, want] : cases) {
    EXPECT_EQ(clean_path(in), want) << "clean_path(\"" << in << "\")";
  }
}

namespace {
User make_user(std::string name, std::string home) {
  User u;
  u.name = std::move(name);
  u.home = std::move(home);
  u.uid = 1000;
  u.gid = 1000;
  u.groups = {1000};
  return u;
}
}  // namespace

TEST(ResolvePath, EmptyUsesDefaultWorkdirElseHome) {
  User user = make_user("user", "/home/user");
  auto with_workdir = resolve_path("", user, std::string("/workspace"));
  ASSERT_TRUE(with_workdir.ok()) << with_workdir.error;
  EXPECT_EQ(with_workdir.path, "/workspace");

  auto without = resolve_path("", user, std::nullopt);
  ASSERT_TRUE(without.ok()) << without.error;
  EXPECT_EQ(without.path, "/home/user");

  // The workdir replaces only an empty path.
  auto dot = resolve_path(".", user, std::string("/workspace"));
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ(dot.path, "/home/user");
}

TEST(ResolvePath, TildeExpandsToTargetUsersHome) {
  User user = make_user("user", "/home/user");
  User root = make_user("root", "/root");
  EXPECT_EQ(resolve_path("~", user, std::nullopt).path, "/home/user");
  EXPECT_EQ(resolve_path("~/", user, std::nullopt).path, "/home/user");
  EXPECT_EQ(resolve_path("~/x", user, std::nullopt).path, "/home/user/x");
  EXPECT_EQ(resolve_path("~/x", root, std::nullopt).path, "/root/x");
  EXPECT_EQ(resolve_path("~/a/../b", user, std::nullopt).path, "/home/user/b");
  EXPECT_EQ(resolve_path("~//x/", user, std::string("/ignored")).path, "/home/user/x");
}

TEST(ResolvePath, TildeOtherUserIsAnError) {
  User user = make_user("user", "/home/user");
  auto r = resolve_path("~other/x", user, std::nullopt);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("cannot expand user-specific home dir"), std::string::npos) << r.error;
  EXPECT_FALSE(resolve_path("~root", user, std::nullopt).ok());
  // A tilde later in the path is an ordinary character.
  auto later = resolve_path("a/~b", user, std::nullopt);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later.path, "/home/user/a/~b");
}

TEST(ResolvePath, RelativeJoinsHomeNotWorkdirAndCleans) {
  User user = make_user("user", "/home/user");
  EXPECT_EQ(resolve_path("file.txt", user, std::string("/workspace")).path, "/home/user/file.txt");
  EXPECT_EQ(resolve_path("a/./b/", user, std::nullopt).path, "/home/user/a/b");
  EXPECT_EQ(resolve_path("../other", user, std::nullopt).path, "/home/other");
  EXPECT_EQ(resolve_path("../../../../etc/passwd", user, std::nullopt).path, "/etc/passwd");
  EXPECT_EQ(resolve_path("..", user, std::nullopt).path, "/home");
}

TEST(ResolvePath, AbsoluteReturnedUnchanged) {
  User user = make_user("user", "/home/user");
  const char* abs[] = {"/tmp", "/a/../b", "//double//slash/", "/x/./y/", "/"};
  for (const char* p : abs) {
    auto r = resolve_path(p, user, std::string("/workspace"));
    ASSERT_TRUE(r.ok()) << p;
    EXPECT_EQ(r.path, p);
  }
  // A default workdir with dots is used as given, like any absolute path.
  EXPECT_EQ(resolve_path("", user, std::string("/w/../x")).path, "/w/../x");
}
