#pragma once
// Users and groups read straight from /etc/passwd and /etc/group: the agent is static and must
// not go through NSS.
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cove::system {

struct PasswdEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
  std::string shell;
};

struct GroupEntry {
  std::string name;
  gid_t gid = 0;
  std::vector<std::string> members;
};

// A user resolved for running something: identity plus every group it belongs to.
struct User {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
  std::vector<gid_t> groups;  // primary gid first, then supplementary groups from /etc/group
};

// Malformed lines are skipped, as getpwent would.
std::vector<PasswdEntry> parse_passwd(std::string_view text);
std::vector<GroupEntry> parse_group(std::string_view text);

class UserDatabase {
 public:
  explicit UserDatabase(std::string etc_dir = "/etc");

  std::optional<User> lookup(std::string_view name) const;
  std::string user_name(uid_t uid) const;   // decimal uid when unknown
  std::string group_name(gid_t gid) const;  // decimal gid when unknown

 private:
  struct Snapshot {
    std::vector<PasswdEntry> users;
    std::vector<GroupEntry> groups;
  };
  // Re-reads the files only when they changed (users may be added inside the sandbox).
  const Snapshot& snapshot() const;

  std::string etc_dir_;
  mutable Snapshot cached_;
  mutable std::string cache_key_;
};

}  // namespace cove::system
