#include "rootfs-builder/image_layers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "rootfs-builder/content_digest.hpp"
#include "rootfs-builder/tar_reader.hpp"
#include "rootfs-builder/unique_fd.hpp"

namespace cove::builder {
namespace {

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";
constexpr std::string_view kWhiteoutMeta = ".wh..wh.";  // aufs bookkeeping (.wh..wh.plnk, …): ignored

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 200)) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  return out;
}

[[noreturn]] void fail(const std::string& path, const char* action, int err) {
  throw TarError("layer entry '" + printable(path) + "': " + action + ": " + std::strerror(err));
}

// Opens the directory `rel` under `root` component by component without following symlinks,
// creating missing ones (0755, root's), as the extractor does for implied parents.
int open_dir(int root, const std::string& rel) {
  int cur = ::fcntl(root, F_DUPFD_CLOEXEC, 0);
  if (cur < 0) fail(rel, "cannot open the layer root", errno);
  size_t pos = 0;
  while (pos < rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string::npos) slash = rel.size();
    const std::string part = rel.substr(pos, slash - pos);
    pos = slash + 1;
    int next = ::openat(cur, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT) {
      if (::mkdirat(cur, part.c_str(), 0755) != 0 && errno != EEXIST) {
        const int err = errno;
        ::close(cur);
        fail(rel, "cannot create a parent directory", err);
      }
      next = ::openat(cur, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next >= 0 && (::fchown(next, 0, 0) != 0 || ::fchmod(next, 0755) != 0)) {
        const int err = errno;
        ::close(next);
        ::close(cur);
        fail(rel, "cannot set up a parent directory", err);
      }
    }
    const int err = errno;
    ::close(cur);
    if (next < 0) fail(rel, err == ELOOP || err == ENOTDIR ? "a parent is a symlink or not a directory" : "cannot open a parent directory", err);
    cur = next;
  }
  return cur;
}

struct Whiteout {
  std::string dir;   // relative, "" = the layer root
  std::string name;  // "" = the opaque marker
};

// Runs `change` on the directory while keeping its mtime: the layer's archived times stay exact.
template <typename Change>
void keeping_mtime(int dir, Change change) {
  struct stat st {};
  const bool have = ::fstat(dir, &st) == 0;
  change();
  if (have) {
    const struct timespec times[2] = {st.st_atim, st.st_mtim};
    (void)::futimens(dir, times);
  }
}

}  // namespace

std::string oci_layer_key(const std::string& digest) {
  return sha256_digest_of("oci-layer\n" + digest).substr(7);  // drop "sha256:"
}

UnpackedLayer unpack_image_layer(const std::string& blob_path, int dest_dir_fd) {
  {
    // zstd would otherwise read as a plain tar with a bad checksum: say what it is.
    unsigned char magic[4] = {0, 0, 0, 0};
    UniqueFd fd(::open(blob_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() >= 0 && ::read(fd.get(), magic, 4) == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f &&
        magic[3] == 0xfd) {
      throw TarError("zstd-compressed layers are not supported");
    }
  }
  UnpackedLayer result;
  std::vector<Whiteout> whiteouts;
  TarReader reader(blob_path, SpecialFiles::report);
  extract(
      reader, dest_dir_fd,
      [&](const TarEntry& e) -> std::string {
        const size_t slash = e.path.rfind('/');
        const std::string dir = slash == std::string::npos ? "" : e.path.substr(0, slash);
        const std::string base = slash == std::string::npos ? e.path : e.path.substr(slash + 1);
        if (base.rfind(kWhiteoutPrefix, 0) == 0) {
          if (base == kOpaqueMarker) {
            whiteouts.push_back({dir, ""});
          } else if (base.rfind(kWhiteoutMeta, 0) != 0) {
            const std::string name = base.substr(kWhiteoutPrefix.size());
            if (name.empty() || name == "." || name == "..") throw TarError("layer entry '" + printable(e.path) + "': malformed whiteout");
            whiteouts.push_back({dir, name});
          }
          return "";
        }
        if (e.type == EntryType::char_device || e.type == EntryType::block_device) {
          ++result.skipped_devices;
          return "";
        }
        return e.path;
      },
      std::nullopt, ExtractPolicy{.fifos = true, .xattrs = true});

  for (const auto& w : whiteouts) {
    UniqueFd dir(open_dir(dest_dir_fd, w.dir));
    const std::string shown = w.dir.empty() ? w.name : w.dir + "/" + w.name;
    if (w.name.empty()) {
      keeping_mtime(dir.get(), [&] {
        if (::fsetxattr(dir.get(), "trusted.overlay.opaque", "y", 1, 0) != 0) fail(w.dir, "cannot mark the directory opaque", errno);
      });
      ++result.opaque_dirs;
      continue;
    }
    struct stat st {};
    // The same layer may also carry the name: a whiteout only hides lower layers, so that one wins.
    if (::fstatat(dir.get(), w.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
    keeping_mtime(dir.get(), [&] {
      if (::mknodat(dir.get(), w.name.c_str(), S_IFCHR | 0, makedev(0, 0)) != 0) fail(shown, "cannot create the whiteout", errno);
      if (::fchownat(dir.get(), w.name.c_str(), 0, 0, AT_SYMLINK_NOFOLLOW) != 0) fail(shown, "cannot own the whiteout", errno);
    });
    ++result.whiteouts;
  }
  return result;
}

}  // namespace cove::builder
