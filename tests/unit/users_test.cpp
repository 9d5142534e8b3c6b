// /etc/passwd and /etc/group parsing and the UserDatabase built on them.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "system/users.hpp"

using cove::system::GroupEntry;
using cove::system::parse_group;
using cove::system::parse_passwd;
using cove::system::PasswdEntry;
using cove::system::UserDatabase;

namespace {

const char* kPasswd =
    "# /etc/passwd: system accounts\n"
    "root:x:0:0:root:/root:/bin/bash\n"
    "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    "\n"
    "user:x:1000:1000:,,,:/home/user:/bin/bash\n"
    "not-a-passwd-line\n"
    "badid:x:12a:1:x:/x:/bin/sh\n"
    "badgid:x:12::x:/x:/bin/sh\n"
    "toofew:x:5:5:/home/toofew\n"
    ":x:7:7::/nowhere:/bin/sh\n"
    "crlf:x:1001:1002::/home/crlf:/bin/sh\r\n"
    "  # indented comment-like junk\n"
    "last:x:4294967294:65534::/home/last:"  // empty shell, no trailing newline
    ;

const char* kGroup =
    "# /etc/group\n"
    "root:x:0:\n"
    "adm:x:4:syslog,user\n"
    "sudo:x:27:user\n"
    "users:x:100:\n"
    "user:x:1000:user\n"     // lists the user in its own primary group
    "broken-group-line\n"
    "badgid:x:zz:user\n"
    "docker:x:999:alice,user,bob\n"
    "notme:x:500:users,user2,xuser\n"  // substrings of "user" must not match
    "trailingcomma:x:501:user,\n"
    "crlf:x:1002:\r\n";

const PasswdEntry* find_user(const std::vector<PasswdEntry>& v, const std::string& name) {
  for (const auto& e : v) if (e.name == name) return &e;
  return nullptr;
}
const GroupEntry* find_group(const std::vector<GroupEntry>& v, const std::string& name) {
  for (const auto& g : v) if (g.name == name) return &g;
  return nullptr;
}

class TempEtc {
 public:
  TempEtc() {
    char tmpl[] = "/tmp/cove-users-test-XXXXXX";
    char* d = mkdtemp(tmpl);
    if (!d) throw std::runtime_error("mkdtemp failed");
    dir_ = d;
  }
  ~TempEtc() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& dir() const { return dir_; }
  // Write-then-rename, as useradd/vipw do.
  void write(const std::string& name, const std::string& content) {
    std::string tmp = dir_ + "/." + name + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << content;
    }
    std::filesystem::rename(tmp, dir_ + "/" + name);
  }
  // In-place rewrite (same inode), as `echo >> /etc/passwd` does.
  void append(const std::string& name, const std::string& content) {
    std::ofstream out(dir_ + "/" + name, std::ios::binary | std::ios::app);
    out << content;
  }

 private:
  std::string dir_;
};

}  // namespace

TEST(ParsePasswd, RealisticText) {
  auto users = parse_passwd(kPasswd);
  std::vector<std::string> names;
  for (const auto& u : users) names.push_back(u.name);
  EXPECT_EQ(names, (std::vector<std::string>{"root", "daemon", "user", "crlf", "last"}));

  const PasswdEntry* root = find_user(users, "root");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->uid, 0u);
  EXPECT_EQ(root->gid, 0u);
  EXPECT_EQ(root->home, "/root");
  EXPECT_EQ(root->shell, "/bin/bash");

  const PasswdEntry* user = find_user(users, "user");
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->uid, 1000u);
  EXPECT_EQ(user->gid, 1000u);
  EXPECT_EQ(user->home, "/home/user");

  const PasswdEntry* crlf = find_user(users, "crlf");
  ASSERT_NE(crlf, nullptr);
  EXPECT_EQ(crlf->uid, 1001u);
  EXPECT_EQ(crlf->gid, 1002u);
  EXPECT_EQ(crlf->shell, "/bin/sh");  // the \r is not part of the shell

  const PasswdEntry* last = find_user(users, "last");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->uid, 4294967294u);
  EXPECT_EQ(last->gid, 65534u);
  EXPECT_EQ(last->home, "/home/last");
  EXPECT_EQ(last->shell, "");
}

TEST(ParsePasswd, EmptyAndCommentOnly) {
  EXPECT_TRUE(parse_passwd("").empty());
  EXPECT_TRUE(parse_passwd("# nothing\n\n#root:x:0:0:root:/root:/bin/bash\n").empty());
}

TEST(ParseGroup, RealisticText) {
  auto groups = parse_group(kGroup);
  std::vector<std::string> names;
  for (const auto& g : groups) names.push_back(g.name);
  EXPECT_EQ(names, (std::vector<std::string>{"root", "adm", "sudo", "users", "user", "docker", "notme",
                                             "trailingcomma", "crlf"}));

  const GroupEntry* root = find_group(groups, "root");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->gid, 0u);
  EXPECT_TRUE(root->members.empty());

  const GroupEntry* docker = find_group(groups, "docker");
  ASSERT_NE(docker, nullptr);
  EXPECT_EQ(docker->gid, 999u);
  EXPECT_EQ(docker->members, (std::vector<std::string>{"alice", "user", "bob"}));

  const GroupEntry* users = find_group(groups, "users");
  ASSERT_NE(users, nullptr);
  EXPECT_EQ(users->gid, 100u);
  EXPECT_TRUE(users->members.empty());

  const GroupEntry* trailing = find_group(groups, "trailingcomma");
  ASSERT_NE(trailing, nullptr);
  EXPECT_EQ(trailing->members, (std::vector<std::string>{"user"}));

  const GroupEntry* crlf = find_group(groups, "crlf");
  ASSERT_NE(crlf, nullptr);
  EXPECT_EQ(crlf->gid, 1002u);
  EXPECT_TRUE(crlf->members.empty());
}

TEST(UserDatabase, LookupResolvesPrimaryThenSupplementaryGroups) {
  TempEtc etc;
  etc.write("passwd", kPasswd);
  etc.write("group", kGroup);
  UserDatabase db(etc.dir());

  auto user = db.lookup("user");
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->name, "user");
  EXPECT_EQ(user->uid, 1000u);
  EXPECT_EQ(user->gid, 1000u);
  EXPECT_EQ(user->home, "/home/user");
  // Primary first; then /etc/group memberships in file order; the primary group is not repeated
  // even though "user:x:1000:user" lists it; "notme" (users,user2,xuser) does not match.
  EXPECT_EQ(user->groups, (std::vector<gid_t>{1000, 4, 27, 999, 501}));

  auto root = db.lookup("root");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->uid, 0u);
  EXPECT_EQ(root->home, "/root");
  EXPECT_EQ(root->groups, (std::vector<gid_t>{0}));

  // A user whose primary group has no /etc/group line still gets it.
  auto daemon = db.lookup("daemon");
  ASSERT_TRUE(daemon.has_value());
  EXPECT_EQ(daemon->groups, (std::vector<gid_t>{1}));

  EXPECT_FALSE(db.lookup("nobody-here").has_value());
  EXPECT_FALSE(db.lookup("").has_value());
  EXPECT_FALSE(db.lookup("use").has_value());
}

TEST(UserDatabase, NamesWithNumericFallback) {
  TempEtc etc;
  etc.write("passwd", kPasswd);
  etc.write("group", kGroup);
  UserDatabase db(etc.dir());
  EXPECT_EQ(db.user_name(0), "root");
  EXPECT_EQ(db.user_name(1000), "user");
  EXPECT_EQ(db.user_name(4242), "4242");
  EXPECT_EQ(db.group_name(999), "docker");
  EXPECT_EQ(db.group_name(1000), "user");
  EXPECT_EQ(db.group_name(31337), "31337");
}

TEST(UserDatabase, MissingFilesMeanNoUsers) {
  TempEtc etc;
  UserDatabase db(etc.dir());
  EXPECT_FALSE(db.lookup("root").has_value());
  EXPECT_EQ(db.user_name(0), "0");
  EXPECT_EQ(db.group_name(0), "0");
  // Files appearing later are picked up.
  etc.write("passwd", "root:x:0:0:root:/root:/bin/sh\n");
  etc.write("group", "root:x:0:\n");
  EXPECT_TRUE(db.lookup("root").has_value());
  EXPECT_EQ(db.group_name(0), "root");
}

TEST(UserDatabase, EditsArePickedUp) {
  TempEtc etc;
  etc.write("passwd", kPasswd);
  etc.write("group", kGroup);
  UserDatabase db(etc.dir());
  ASSERT_FALSE(db.lookup("newbie").has_value());  // populates the cache
  EXPECT_EQ(db.user_name(2000), "2000");

  // Replaced file (new inode).
  etc.write("passwd", std::string(kPasswd) + "\nnewbie:x:2000:2000::/home/newbie:/bin/sh\n");
  auto newbie = db.lookup("newbie");
  ASSERT_TRUE(newbie.has_value());
  EXPECT_EQ(newbie->uid, 2000u);
  EXPECT_EQ(newbie->groups, (std::vector<gid_t>{2000}));
  EXPECT_EQ(db.user_name(2000), "newbie");

  // In-place append to the group file (same inode, size changes).
  etc.append("group", "devs:x:3000:newbie,user\n");
  newbie = db.lookup("newbie");
  ASSERT_TRUE(newbie.has_value());
  EXPECT_EQ(newbie->groups, (std::vector<gid_t>{2000, 3000}));
  EXPECT_EQ(db.group_name(3000), "devs");

  // Removal is picked up too.
  etc.write("passwd", "root:x:0:0:root:/root:/bin/sh\n");
  EXPECT_FALSE(db.lookup("newbie").has_value());
  EXPECT_FALSE(db.lookup("user").has_value());
  EXPECT_EQ(db.user_name(1000), "1000");
}
