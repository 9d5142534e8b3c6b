#include "system/users.hpp"

#include <sys/stat.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace cove::system {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

template <typename T>
bool parse_id(std::string_view s, T& out) {
  if (s.empty()) return false;
  unsigned long value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return false;
  out = static_cast<T>(value);
  return true;
}

template <typename Fn>
void for_each_line(std::string_view text, Fn fn) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && line.front() != '#') fn(line);
    start = end + 1;
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string file_stamp(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return "-";
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

std::vector<PasswdEntry> parse_passwd(std::string_view text) {
  std::vector<PasswdEntry> out;
  for_each_line(text, [&](std::string_view line) {
    auto f = split(line, ':');
    if (f.size() != 7 || f[0].empty()) return;
    PasswdEntry e;
    e.name = std::string(f[0]);
    if (!parse_id(f[2], e.uid) || !parse_id(f[3], e.gid)) return;
    e.home = std::string(f[5]);
    e.shell = std::string(f[6]);
    out.push_back(std::move(e));
  });
  return out;
}

std::vector<GroupEntry> parse_group(std::string_view text) {
  std::vector<GroupEntry> out;
  for_each_line(text, [&](std::string_view line) {
    auto f = split(line, ':');
    if (f.size() != 4 || f[0].empty()) return;
    GroupEntry g;
    g.name = std::string(f[0]);
    if (!parse_id(f[2], g.gid)) return;
    if (!f[3].empty()) {
      for (auto m : split(f[3], ',')) {
        if (!m.empty()) g.members.emplace_back(m);
      }
    }
    out.push_back(std::move(g));
  });
  return out;
}

UserDatabase::UserDatabase(std::string etc_dir) : etc_dir_(std::move(etc_dir)) {}

const UserDatabase::Snapshot& UserDatabase::snapshot() const {
  const std::string passwd = etc_dir_ + "/passwd";
  const std::string group = etc_dir_ + "/group";
  std::string key = file_stamp(passwd) + "|" + file_stamp(group);
  if (key != cache_key_) {
    cached_.users = parse_passwd(read_file(passwd));
    cached_.groups = parse_group(read_file(group));
    cache_key_ = std::move(key);
  }
  return cached_;
}

std::optional<User> UserDatabase::lookup(std::string_view name) const {
  const Snapshot& snap = snapshot();
  for (const auto& e : snap.users) {
    if (e.name != name) continue;
    User u{e.name, e.uid, e.gid, e.home, {e.gid}};
    for (const auto& g : snap.groups) {
      if (g.gid == e.gid) continue;
      for (const auto& m : g.members) {
        if (m == e.name) {
          u.groups.push_back(g.gid);
          break;
        }
      }
    }
    return u;
  }
  return std::nullopt;
}

std::string UserDatabase::user_name(uid_t uid) const {
  for (const auto& e : snapshot().users) {
    if (e.uid == uid) return e.name;
  }
  return std::to_string(uid);
}

std::string UserDatabase::group_name(gid_t gid) const {
  for (const auto& g : snapshot().groups) {
    if (g.gid == gid) return g.name;
  }
  return std::to_string(gid);
}

}  // namespace cove::system
