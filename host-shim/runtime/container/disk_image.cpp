#include "runtime/container/disk_image.hpp"

#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "runtime/container/host_files.hpp"


namespace cove::shim::container {
namespace {

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

const char* find_mkfs() {
  for (const char* p : {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", "/usr/bin/mkfs.ext4"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return nullptr;
}

// Runs mkfs.ext4 on `path` (already sized). posix_spawn: the shim is multi-threaded.
void run_mkfs(const std::string& path) {
  const char* mkfs = find_mkfs();
  if (!mkfs) throw std::runtime_error("mkfs.ext4 not found (install e2fsprogs)");
  // -m 0: no blocks reserved for root, the sandbox gets the whole size. No journal and no resize
  // inode: a throwaway disk that never grows. lazy_itable_init: inode tables stay holes.
  std::vector<std::string> args = {"mkfs.ext4", "-q", "-F", "-m", "0", "-b", "4096",
                                   "-O", "^has_journal,^resize_inode",
                                   "-E", "lazy_itable_init=1,nodiscard", path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char* env[] = {const_cast<char*>("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, mkfs, &fa, nullptr, argv.data(), env);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "spawn mkfs.ext4");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("mkfs.ext4 failed");
}

}  // namespace

DiskImageCache::DiskImageCache(std::string dir) : dir_(std::move(dir)) {}

std::string DiskImageCache::empty_image(int size_mb) {
  if (size_mb < 16 || size_mb > 16 * 1024 * 1024) throw std::runtime_error("disk size out of range");
  std::string path = dir_ + "/empty-" + std::to_string(size_mb) + "m.ext4";
  std::lock_guard lock(mutex_);
  if (exists(path)) return path;
  if (mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) throw_errno("create image cache");
  // Built under a temporary name and renamed: a crash never leaves a half-made image behind.
  std::string tmp = path + ".tmp";
  unlink(tmp.c_str());
  {
    Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (fd.fd < 0) throw_errno("create image");
    if (ftruncate(fd.fd, static_cast<off_t>(size_mb) << 20) != 0) throw_errno("size image");
  }
  try {
    run_mkfs(tmp);
  } catch (...) {
    unlink(tmp.c_str());
    throw;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) throw_errno("publish image");
  return path;
}

void copy_sparse(const std::string& from, const std::string& to) {
  Fd in(open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) throw_errno("open image");
  struct stat st;
  if (fstat(in.fd, &st) != 0) throw_errno("stat image");
  Fd out(open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (out.fd < 0) throw_errno("create disk");
  if (ftruncate(out.fd, st.st_size) != 0) throw_errno("size disk");
  off_t pos = 0;
  while (pos < st.st_size) {
    off_t data = lseek(in.fd, pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // only a hole remains
      throw_errno("seek image");
    }
    off_t hole = lseek(in.fd, data, SEEK_HOLE);
    if (hole < 0) throw_errno("seek image");
    off_t src = data, dst = data;
    while (src < hole) {
      ssize_t n = copy_file_range(in.fd, &src, out.fd, &dst, static_cast<size_t>(hole - src), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw_errno("copy image");
    }
    pos = hole;
  }
}

LoopDevice attach_loop(const std::string& image) {
  Fd file(open(image.c_str(), O_RDWR | O_CLOEXEC));
  if (file.fd < 0) throw_errno("open disk image");
  Fd control(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (control.fd < 0) throw_errno("open loop-control");
  // Another process may take the device between GET_FREE and CONFIGURE: then ask again.
  for (int attempt = 0; attempt < 64; ++attempt) {
    int n = ioctl(control.fd, LOOP_CTL_GET_FREE);
    if (n < 0) throw_errno("find free loop device");
    std::string path = "/dev/loop" + std::to_string(n);
    int dev = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (dev < 0) {
      if (errno == ENOENT) continue;  // devtmpfs has not made the node yet
      throw_errno("open loop device");
    }
    struct loop_config config {};
    config.fd = static_cast<uint32_t>(file.fd);
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (ioctl(dev, LOOP_CONFIGURE, &config) == 0) return LoopDevice{dev, n};
    int e = errno;
    close(dev);
    if (e != EBUSY) {
      errno = e;
      throw_errno("configure loop device");
    }
  }
  throw std::runtime_error("no free loop device");
}

bool loop_attached(int number) {
  return exists("/sys/block/loop" + std::to_string(number) + "/loop/backing_file");
}

void mount_disk(const std::string& device, const std::string& target) {
  if (mount(device.c_str(), target.c_str(), "ext4", MS_NOATIME, "noinit_itable") != 0) throw_errno("mount disk");
}

}  // namespace cove::shim::container
