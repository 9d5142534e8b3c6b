#include "runtime/container/changes_layer.hpp"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "runtime/container/host_files.hpp"

namespace cove::shim::container {
namespace {

// nftw takes a plain function: the range travels in these (one hand-over at a time per thread).
thread_local uint32_t shift_base = 0;
thread_local uint32_t shift_count = 0;

uint32_t unshifted(uint32_t id) {
  return id >= shift_base && id - shift_base < shift_count ? id - shift_base : id;
}

int shift_entry(const char* path, const struct stat* st, int, struct FTW*) {
  uid_t uid = unshifted(st->st_uid);
  gid_t gid = unshifted(st->st_gid);
  if (uid == st->st_uid && gid == st->st_gid) return 0;
  // lchown clears setuid/setgid bits of regular files: put them back.
  if (lchown(path, uid, gid) != 0) return errno;
  if (S_ISREG(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)) != 0 &&
      chmod(path, st->st_mode & 07777) != 0) {
    return errno;
  }
  return 0;
}

}  // namespace

void hand_over_changes(const std::string& changes_dir, uint32_t id_base, uint32_t id_count) {
  remove_tree(changes_dir + "/work");
  // The agent's host-channel socket is the container runtime's, not the template's.
  remove_tree(changes_dir + "/upper/run/cove");
  std::string upper = changes_dir + "/upper";
  if (!exists(upper)) return;
  shift_base = id_base;
  shift_count = id_count;
  // FTW_PHYS: symlinks are entries, never followed; FTW_MOUNT: stay on this filesystem.
  int rc = nftw(upper.c_str(), shift_entry, 64, FTW_PHYS | FTW_MOUNT);
  if (rc != 0) {
    if (rc > 0) errno = rc;
    throw_errno("shift layer ownership");
  }
}

}  // namespace cove::shim::container
