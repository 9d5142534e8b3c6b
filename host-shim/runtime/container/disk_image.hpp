#pragma once
// Each sandbox's writable layer lives on its own ext4 filesystem image, so a full disk is ENOSPC
// inside the sandbox only and `df` shows the size it was given. Images are sparse clones of an
// empty filesystem made once per size (no journal: the disk dies with the sandbox).
#include <mutex>
#include <string>

namespace cove::shim::container {

// Shim side: the per-size empty images, kept in one directory.
class DiskImageCache {
 public:
  explicit DiskImageCache(std::string dir);
  // Path of the empty image of `size_mb`, made with mkfs.ext4 on first use. Thread-safe.
  // Throws std::runtime_error.
  std::string empty_image(int size_mb);

 private:
  std::string dir_;
  std::mutex mutex_;
};

// Copies `from` to a new file `to` keeping holes (only the data extents are copied), so a
// 2 GiB empty filesystem costs a few hundred KiB. Throws std::system_error.
void copy_sparse(const std::string& from, const std::string& to);

// Launcher side: attaches `image` to a free loop device with autoclear (it detaches itself when
// its last user goes away: the mount, in a namespace that dies with the sandbox). Returns the
// open device; keep it open until the filesystem is mounted. Throws std::system_error.
struct LoopDevice {
  int fd = -1;
  int number = -1;
  std::string path() const { return "/dev/loop" + std::to_string(number); }
};
LoopDevice attach_loop(const std::string& image);
// True while loop device `number` still has a backing file.
bool loop_attached(int number);

// Mounts the ext4 filesystem on `device` at `target` (no background inode-table zeroing).
void mount_disk(const std::string& device, const std::string& target);

}  // namespace cove::shim::container
