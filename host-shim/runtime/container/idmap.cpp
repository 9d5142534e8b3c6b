#include "runtime/container/idmap.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <stdexcept>

#include "runtime/container/host_files.hpp"

namespace cove::shim::container {

uint32_t host_base_for_slot(int64_t slot) {
  constexpr uint64_t kLimit = 0xFFFFFFFFull;  // (uid_t)-1 is never a valid id
  if (slot < 0) throw std::out_of_range("slot is negative");
  uint64_t base = kIdRangeStart + static_cast<uint64_t>(slot) * kIdRangeSize;
  if (base + kIdRangeSize > kLimit) throw std::out_of_range("slot too large for the uid space");
  return static_cast<uint32_t>(base);
}

std::string id_map_line(uint32_t base, uint32_t count) {
  return "0 " + std::to_string(base) + " " + std::to_string(count) + "\n";
}

void write_id_maps(pid_t pid, uint32_t base, uint32_t count) {
  std::string proc = "/proc/" + std::to_string(pid) + "/";
  std::string line = id_map_line(base, count);
  write_text(proc + "uid_map", line, "write uid_map");
  write_text(proc + "gid_map", line, "write gid_map");
}

void idmapped_bind(const std::string& source, int userns_fd, const std::string& target) {
  int tree = open_tree(AT_FDCWD, source.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (tree < 0) throw_errno("open_tree layer");
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    int e = errno;
    close(tree);
    errno = e;
    throw_errno("idmap layer");
  }
  if (move_mount(tree, "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    int e = errno;
    close(tree);
    errno = e;
    throw_errno("attach layer");
  }
  close(tree);
}

}  // namespace cove::shim::container
