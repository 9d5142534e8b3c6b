#include "filesystem/entry_info.hpp"

#include <sys/xattr.h>

#include <cerrno>
#include <vector>

#include "filesystem/eval_symlinks.hpp"
#include "system/go_errors.hpp"

namespace cove::filesystem {
namespace {

constexpr std::string_view kMetadataPrefix = "user.e2b.";

EntryType type_of(mode_t st_mode) {
  if (S_ISREG(st_mode)) return EntryType::file;
  if (S_ISDIR(st_mode)) return EntryType::directory;
  return EntryType::unspecified;  // fifo, socket, device: envd has no type for them
}

// getxattr/listxattr into a growing buffer (the size can change between the two calls).
template <typename Call>
std::optional<std::string> read_sized(Call call) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    ssize_t size = call(nullptr, 0);
    if (size < 0) return std::nullopt;
    std::string buf(static_cast<size_t>(size), '\0');
    if (size == 0) return buf;
    ssize_t n = call(buf.data(), buf.size());
    if (n >= 0) {
      buf.resize(static_cast<size_t>(n));
      return buf;
    }
    if (errno != ERANGE) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

uint32_t go_file_mode(mode_t st_mode) {
  uint32_t m = st_mode & 0777;
  switch (st_mode & S_IFMT) {
    case S_IFBLK: m |= go_mode::device; break;
    case S_IFCHR: m |= go_mode::device | go_mode::char_device; break;
    case S_IFDIR: m |= go_mode::dir; break;
    case S_IFIFO: m |= go_mode::named_pipe; break;
    case S_IFLNK: m |= go_mode::symlink; break;
    case S_IFSOCK: m |= go_mode::socket; break;
    default: break;  // regular files carry no type bit
  }
  if (st_mode & S_ISGID) m |= go_mode::setgid;
  if (st_mode & S_ISUID) m |= go_mode::setuid;
  if (st_mode & S_ISVTX) m |= go_mode::sticky;
  return m;
}

std::string file_mode_string(uint32_t m) {
  static constexpr std::string_view kTypeLetters = "dalTLDpSugct?";
  static constexpr std::string_view kPerm = "rwxrwxrwx";
  std::string out;
  for (size_t i = 0; i < kTypeLetters.size(); ++i) {
    if (m & (1u << (31 - i))) out += kTypeLetters[i];
  }
  if (out.empty()) out += '-';
  for (size_t i = 0; i < kPerm.size(); ++i) {
    out += (m & (1u << (8 - i))) ? kPerm[i] : '-';
  }
  return out;
}

std::string base_name(std::string_view path) {
  if (path.empty()) return ".";
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path == "/") return "/";
  auto slash = path.rfind('/');
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  return std::string(path);
}

std::map<std::string, std::string> read_metadata(const std::string& path) {
  std::map<std::string, std::string> out;
  auto names = read_sized([&](char* buf, size_t n) { return listxattr(path.c_str(), buf, n); });
  if (!names) return out;
  size_t start = 0;
  while (start < names->size()) {
    size_t end = names->find('\0', start);
    if (end == std::string::npos) end = names->size();
    std::string_view name(names->data() + start, end - start);
    start = end + 1;
    if (name.size() <= kMetadataPrefix.size() || name.substr(0, kMetadataPrefix.size()) != kMetadataPrefix) continue;
    const std::string full(name);
    auto value = read_sized([&](char* buf, size_t n) { return getxattr(path.c_str(), full.c_str(), buf, n); });
    if (!value) continue;  // removed meanwhile (ENODATA) or unreadable
    std::string key(name.substr(kMetadataPrefix.size()));
    if (!system::valid_utf8(key) || !system::valid_utf8(*value)) continue;
    out.emplace(std::move(key), std::move(*value));
  }
  return out;
}

EntryInfo make_entry_info(const std::string& path, const struct stat& st, const system::UserDatabase& users) {
  EntryInfo e;
  e.name = base_name(path);
  e.path = path;
  e.size = static_cast<int64_t>(st.st_size);
  e.permissions = file_mode_string(go_file_mode(st.st_mode));
  e.owner = users.user_name(st.st_uid);
  e.group = users.group_name(st.st_gid);
  if (st.st_mtim.tv_sec != 0 || st.st_mtim.tv_nsec != 0) {
    e.modified_time = Timespec{static_cast<int64_t>(st.st_mtim.tv_sec), static_cast<int32_t>(st.st_mtim.tv_nsec)};
  }
  if (S_ISLNK(st.st_mode)) {
    // A link that cannot be resolved (dangling, looping) names itself as its target.
    auto resolved = eval_symlinks(path);
    e.symlink_target = resolved.ok() ? resolved.path : path;
    struct stat target{};
    if (stat(e.symlink_target->c_str(), &target) == 0) {
      e.type = type_of(target.st_mode);
      e.mode = target.st_mode & 0777;
    }
  } else {
    e.type = type_of(st.st_mode);
    e.mode = st.st_mode & 0777;
  }
  e.metadata = read_metadata(path);
  return e;
}

std::optional<EntryInfo> entry_info(const std::string& path, const system::UserDatabase& users, int& err) {
  struct stat st{};
  if (lstat(path.c_str(), &st) != 0) {
    err = errno;
    return std::nullopt;
  }
  err = 0;
  return make_entry_info(path, st, users);
}

}  // namespace cove::filesystem
