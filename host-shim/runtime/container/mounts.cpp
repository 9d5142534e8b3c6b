#include "runtime/container/mounts.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "runtime/container/host_files.hpp"

namespace cove::shim::container {
namespace {

void do_mount(const char* source, const char* target, const char* type, unsigned long flags, const char* data,
              const char* what) {
  if (mount(source, target, type, flags, data) != 0) throw_errno(what);
}

void make_dir(const char* path, mode_t mode) {
  if (mkdir(path, mode) != 0 && errno != EEXIST) throw_errno("create mount point");
}

void make_file(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("create device mount point");
  close(fd);
}

void make_symlink(const char* target, const char* path) {
  if (symlink(target, path) != 0 && errno != EEXIST) throw_errno("create /dev link");
}

}  // namespace

void make_mounts_private() {
  if (unshare(CLONE_NEWNS) != 0) throw_errno("unshare mount namespace");
  do_mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr, "make mounts private");
}

void mount_overlay(const std::vector<std::string>& lowers, const std::string& upper, const std::string& work,
                   const std::string& target) {
  std::string options = "lowerdir=";
  for (size_t i = 0; i < lowers.size(); ++i) options += (i ? ":" : "") + lowers[i];
  options += ",upperdir=" + upper + ",workdir=" + work;
  do_mount("overlay", target.c_str(), "overlay", 0, options.c_str(), "mount overlay");
}

void enter_rootfs(const std::string& rootfs) {
  do_mount(rootfs.c_str(), rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr, "bind root");
  if (chdir(rootfs.c_str()) != 0) throw_errno("enter root");
}

void populate_root() {
  make_dir("proc", 0555);
  do_mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, "mount /proc");

  make_dir("dev", 0755);
  do_mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k", "mount /dev");
  for (const char* node : kHostDeviceNodes) {
    std::string host = std::string("/dev/") + node;
    std::string inside = std::string("dev/") + node;
    make_file(inside.c_str());
    do_mount(host.c_str(), inside.c_str(), nullptr, MS_BIND, nullptr, "bind device node");
  }
  make_dir("dev/pts", 0755);
  do_mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5",
           "mount /dev/pts");
  make_symlink("pts/ptmx", "dev/ptmx");
  make_dir("dev/shm", 01777);
  do_mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", "mount /dev/shm");
  make_symlink("/proc/self/fd", "dev/fd");
  make_symlink("/proc/self/fd/0", "dev/stdin");
  make_symlink("/proc/self/fd/1", "dev/stdout");
  make_symlink("/proc/self/fd/2", "dev/stderr");

  // A fresh sysfs of the sandbox's own network namespace, read-only.
  make_dir("sys", 0555);
  do_mount("sysfs", "sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, "mount /sys");

  make_dir("tmp", 01777);
  do_mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", "mount /tmp");
  make_dir("run", 0755);
  do_mount("tmpfs", "run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", "mount /run");
  // The host channel: the agent's socket lives here, inside the sandbox's own mounts, and the
  // shim reaches it through /proc/<pid>/root. (A bind of a host dir would show its host path in
  // the sandbox's mountinfo.)
  make_dir("run/cove", 0700);
}

void pivot_to_cwd() {
  // Stack the old root on the new one, then detach it: no put_old directory needed.
  if (syscall(SYS_pivot_root, ".", ".") != 0) throw_errno("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) throw_errno("detach old root");
  if (chdir("/") != 0) throw_errno("enter new root");
}

}  // namespace cove::shim::container
