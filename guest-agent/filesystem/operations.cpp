#include "filesystem/operations.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "filesystem/ensure_dirs.hpp"
#include "filesystem/eval_symlinks.hpp"
#include "system/go_errors.hpp"
#include "system/paths.hpp"

namespace cove::filesystem {
namespace {

OpError error(ErrorKind kind, std::string message) { return {kind, std::move(message)}; }

std::string join(const std::string& base, const std::string& rel) {
  if (rel.empty()) return base;
  if (!base.empty() && base.back() == '/') return base + rel;
  return base + "/" + rel;
}

// filepath.Dir: everything before the last separator, cleaned.
std::string dir_name(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return system::clean_path(path.substr(0, slash + 1));
}

// The names in a directory except "." and "..", sorted bytewise as Go's ReadDir does.
bool read_names(int dirfd_or_minus1, const std::string& path, std::vector<std::string>& names, int& err) {
  DIR* dir = nullptr;
  if (dirfd_or_minus1 >= 0) {
    dir = fdopendir(dirfd_or_minus1);
  } else {
    dir = opendir(path.c_str());
  }
  if (dir == nullptr) {
    err = errno;
    return false;
  }
  errno = 0;
  while (dirent* d = readdir(dir)) {
    std::string_view n(d->d_name);
    if (n != "." && n != "..") names.emplace_back(n);
    errno = 0;
  }
  err = errno;
  closedir(dir);
  if (err != 0) return false;
  std::sort(names.begin(), names.end());
  return true;
}

OpError entry_error(const std::string& path, int err) {
  if (err == ENOENT) return error(ErrorKind::not_found, "file not found: " + system::path_error("lstat", path, err));
  return error(ErrorKind::internal, "error getting file info: " + system::path_error("lstat", path, err));
}

// Go's os.RemoveAll after its first plain remove failed: delete `base` inside the directory
// `parent`, depth first. Records the first error but keeps going, as Go does.
OpError remove_all_from(int parent, const std::string& parent_path, const std::string& base) {
  const std::string full = join(parent_path, base);
  if (unlinkat(parent, base.c_str(), 0) == 0 || errno == ENOENT) return {};
  const int unlink_err = errno;
  if (unlink_err != EISDIR && unlink_err != EPERM && unlink_err != EACCES) {
    return error(ErrorKind::internal, system::path_error("unlinkat", full, unlink_err));
  }
  int fd = openat(parent, base.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return {};
    if (errno == ENOTDIR || errno == ELOOP) return error(ErrorKind::internal, system::path_error("unlinkat", full, unlink_err));
    return error(ErrorKind::internal, system::path_error("openat", full, errno));
  }
  OpError first;
  std::vector<std::string> names;
  int read_fd = dup(fd);
  int err = 0;
  if (read_fd < 0 || !read_names(read_fd, full, names, err)) {
    if (read_fd < 0) err = errno;
    first = error(ErrorKind::internal, system::path_error("readdirent", full, err));
  }
  for (const auto& name : names) {
    OpError e = remove_all_from(fd, full, name);
    if (!e.ok() && first.ok()) first = std::move(e);
  }
  close(fd);
  if (unlinkat(parent, base.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return {};
  if (!first.ok()) return first;
  return error(ErrorKind::internal, system::path_error("unlinkat", full, errno));
}

}  // namespace

OpResult<EntryInfo> stat_entry(const std::string& path, const system::UserDatabase& users) {
  OpResult<EntryInfo> r;
  int err = 0;
  auto e = entry_info(path, users, err);
  if (!e) {
    r.error = entry_error(path, err);
    return r;
  }
  r.value = std::move(*e);
  return r;
}

OpResult<std::vector<EntryInfo>> list_dir(const std::string& path, uint32_t depth, const system::UserDatabase& users) {
  OpResult<std::vector<EntryInfo>> r;
  if (depth == 0) depth = 1;

  auto resolved = eval_symlinks(path);
  switch (resolved.error) {
    case EvalResult::Error::none: break;
    case EvalResult::Error::not_exist:
      r.error = error(ErrorKind::not_found, "path not found: " + resolved.message);
      return r;
    case EvalResult::Error::too_many_links:
      r.error = error(ErrorKind::failed_precondition, "cyclic symlink or chain >255 links at " + system::go_quote(path));
      return r;
    case EvalResult::Error::other:
      r.error = error(ErrorKind::internal, "error resolving symlink: " + resolved.message);
      return r;
  }
  const std::string& root = resolved.path;
  struct stat st{};
  if (stat(root.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      r.error = error(ErrorKind::not_found, "directory not found: " + system::path_error("stat", root, err));
    } else {
      r.error = error(ErrorKind::internal, "error getting file info: " + system::path_error("stat", root, err));
    }
    return r;
  }
  if (!S_ISDIR(st.st_mode)) {
    r.error = error(ErrorKind::invalid_argument, "path is not a directory: " + root);
    return r;
  }

  auto walk_error = [&](std::string detail) {
    r.value.clear();
    r.error = error(ErrorKind::internal, "error reading directory " + root + ": " + detail);
  };

  // Depth-first, each directory's entries in lexical order, as filepath.WalkDir visits them.
  // The stack holds paths relative to the root with their depth; children are pushed in
  // reverse so they pop in order.
  struct Item {
    std::string rel;
    uint32_t level;
  };
  std::vector<Item> stack;
  auto push_children = [&](const std::string& rel, uint32_t level) -> bool {
    std::vector<std::string> names;
    int err = 0;
    const std::string dir = join(root, rel);
    if (!read_names(-1, dir, names, err)) {
      if (err == ENOENT && !rel.empty()) return true;  // vanished since it was listed
      walk_error(system::path_error("open", dir, err));
      return false;
    }
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
      stack.push_back({rel.empty() ? *it : rel + "/" + *it, level});
    }
    return true;
  };
  if (!push_children("", 1)) return r;
  while (!stack.empty()) {
    Item item = std::move(stack.back());
    stack.pop_back();
    const std::string walked = join(root, item.rel);
    struct stat est{};
    if (lstat(walked.c_str(), &est) != 0) {
      if (errno == ENOENT) continue;  // vanished since the directory was read
      walk_error(system::path_error("lstat", walked, errno));
      return r;
    }
    // Paths are reported under the requested base, not the resolved one.
    r.value.push_back(make_entry_info(system::clean_path(join(path, item.rel)), est, users));
    // Symlinks are not followed; directories at the depth limit are not read at all.
    if (S_ISDIR(est.st_mode) && item.level < depth) {
      if (!push_children(item.rel, item.level + 1)) return r;
    }
  }
  return r;
}

OpResult<EntryInfo> make_dir(const std::string& path, uid_t uid, gid_t gid, const system::UserDatabase& users) {
  OpResult<EntryInfo> r;
  struct stat st{};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      r.error = error(ErrorKind::already_exists, "directory already exists: " + path);
    } else {
      r.error = error(ErrorKind::invalid_argument, "path already exists but it is not a directory");
    }
    return r;
  }
  if (errno != ENOENT) {
    r.error = error(ErrorKind::internal, "error getting file info: " + system::path_error("stat", path, errno));
    return r;
  }
  std::string ensure_error;
  if (!ensure_dirs(path, uid, gid, ensure_error)) {
    r.error = error(ErrorKind::internal, ensure_error);
    return r;
  }
  return stat_entry(path, users);
}

OpResult<EntryInfo> move_entry(const std::string& source, const std::string& destination, uid_t uid, gid_t gid,
                               const system::UserDatabase& users) {
  OpResult<EntryInfo> r;
  std::string ensure_error;
  if (!ensure_dirs(dir_name(destination), uid, gid, ensure_error)) {
    r.error = error(ErrorKind::internal, ensure_error);
    return r;
  }
  if (rename(source.c_str(), destination.c_str()) != 0) {
    const int err = errno;
    const std::string detail = "rename " + source + " " + destination + ": " + system::errno_text(err);
    if (err == ENOENT) {
      r.error = error(ErrorKind::not_found, "source file not found: " + detail);
    } else {
      r.error = error(ErrorKind::internal, "error renaming: " + detail);
    }
    return r;
  }
  return stat_entry(destination, users);
}

OpError remove_all(const std::string& path) {
  const std::string prefix = "error removing file or directory: ";
  if (path.empty()) return {};
  // Go refuses paths ending in "." (removing "x/." would remove x's contents, not x).
  if (path == "." || (path.size() >= 2 && path.back() == '.' && path[path.size() - 2] == '/')) {
    return error(ErrorKind::internal, prefix + system::path_error("RemoveAll", path, EINVAL));
  }
  if (unlink(path.c_str()) == 0 || errno == ENOENT) return {};
  if (rmdir(path.c_str()) == 0 || errno == ENOENT) return {};

  // Not a plain file or empty directory: delete the tree from its parent.
  std::string parent = dir_name(path);
  std::string base = base_name(path);
  int pfd = open(parent.c_str(), O_RDONLY | O_CLOEXEC);
  if (pfd < 0) {
    if (errno == ENOENT) return {};
    return error(ErrorKind::internal, prefix + system::path_error("open", parent, errno));
  }
  OpError e = remove_all_from(pfd, parent, base);
  close(pfd);
  if (!e.ok()) e.message = prefix + e.message;
  return e;
}

bool is_network_filesystem_magic(long magic) {
  switch (static_cast<unsigned long>(magic) & 0xFFFFFFFFul) {
    case 0x6969ul:      // NFS
    case 0xFF534D42ul:  // CIFS
    case 0x517Bul:      // SMB
    case 0xFE534D42ul:  // SMB2
    case 0x65735546ul:  // FUSE
      return true;
    default:
      return false;
  }
}

OpError check_watch_path(const std::string& path, bool allow_network_mounts) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return error(ErrorKind::not_found, "path " + path + " not found: " + system::path_error("stat", path, err));
    return error(ErrorKind::internal, "error statting path " + path + ": " + system::path_error("stat", path, err));
  }
  if (!S_ISDIR(st.st_mode)) return error(ErrorKind::invalid_argument, "path " + path + " not a directory");
  struct statfs fs{};
  if (statfs(path.c_str(), &fs) != 0) {
    return error(ErrorKind::internal, "error checking mount status: failed to statfs " + path + ": " + system::errno_text(errno));
  }
  if (is_network_filesystem_magic(static_cast<long>(fs.f_type)) && !allow_network_mounts) {
    return error(ErrorKind::invalid_argument, "cannot watch path on network filesystem: " + path);
  }
  return {};
}

}  // namespace cove::filesystem
