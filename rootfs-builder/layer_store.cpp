#include "rootfs-builder/layer_store.hpp"

#include <openssl/rand.h>
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "rootfs-builder/build_plan.hpp"

namespace cove::builder {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kStagingPrefix = ".staging-";

std::string random_suffix() {
  unsigned char bytes[8];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no randomness for a staging name");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

// remove_all that does not cross into other filesystems is not in <filesystem>; layers never
// hold mount points (nothing is mounted on the host), so plain remove_all is right here.
void remove_quietly(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

}  // namespace

LayerStore::LayerStore(std::string root) : root_(std::move(root)) {
  fs::create_directories(root_);
  ::chmod(root_.c_str(), 0700);
}

std::string LayerStore::path(const std::string& key) const { return root_ + "/" + key; }

bool LayerStore::has(const std::string& key) const {
  std::error_code ec;
  return fs::is_directory(path(key), ec);
}

std::string LayerStore::make_staging() const {
  std::string dir = root_ + "/" + std::string(kStagingPrefix) + random_suffix();
  if (::mkdir(dir.c_str(), 0755) != 0) throw std::system_error(errno, std::generic_category(), "create a staging dir");
  return dir;
}

std::string LayerStore::publish(const std::string& tree, const std::string& key) const {
  std::string target = path(key);
  std::error_code ec;
  fs::rename(tree, target, ec);
  if (ec) {
    // ENOTEMPTY/EEXIST: the same content was published first; it is identical by construction.
    if (!has(key)) throw std::system_error(ec, "publish a layer");
    remove_quietly(tree);
  }
  return target;
}

void LayerStore::discard(const std::string& dir) const { remove_quietly(dir); }

void LayerStore::remove_staging_leftovers() const {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    if (entry.path().filename().string().rfind(kStagingPrefix, 0) == 0) remove_quietly(entry.path());
  }
}

size_t LayerStore::collect_garbage(const std::set<std::string>& keep) const {
  size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    std::string name = entry.path().filename().string();
    if (!valid_files_hash(name) || keep.count(entry.path().string())) continue;  // only content-keyed layers
    remove_quietly(entry.path());
    ++removed;
  }
  return removed;
}

uint64_t LayerStore::disk_usage(const std::string& key) const {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(path(key), fs::directory_options::none, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

}  // namespace cove::builder
