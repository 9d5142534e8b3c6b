#include "runtime/container/host_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace cove::shim::container {

void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

bool try_read_text(const std::string& path, std::string& out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      errno = e;
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

std::string read_text(const std::string& path) {
  std::string out;
  if (!try_read_text(path, out)) throw_errno("read");
  return out;
}

bool try_write_text(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // Kernel control files take the value in one write.
  ssize_t n;
  do n = write(fd, text.data(), text.size());
  while (n < 0 && errno == EINTR);
  int e = errno;
  close(fd);
  errno = e;
  return n == static_cast<ssize_t>(text.size());
}

void write_text(const std::string& path, const std::string& text, const char* what) {
  if (!try_write_text(path, text)) throw_errno(what);
}

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

namespace {
// Empties the directory `dirfd` (whose device is `dev`), closing dirfd.
void empty_dir(int dirfd, dev_t dev) {
  DIR* dir = fdopendir(dirfd);
  if (!dir) {
    close(dirfd);
    throw_errno("open directory");
  }
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != dev) continue;  // a mount point: not ours to empty
      int sub = openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) empty_dir(sub, dev);
      unlinkat(dirfd, name.c_str(), AT_REMOVEDIR);
    } else {
      unlinkat(dirfd, name.c_str(), 0);
    }
  }
  closedir(dir);
}
}  // namespace

void remove_tree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw_errno("stat");
  }
  if (!S_ISDIR(st.st_mode)) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) throw_errno("unlink");
    return;
  }
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw_errno("open directory");
  empty_dir(fd, st.st_dev);
  if (rmdir(path.c_str()) != 0 && errno != ENOENT) throw_errno("remove directory");
}

}  // namespace cove::shim::container
