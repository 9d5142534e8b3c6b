#pragma once
// Reading and extracting the build-context tars the E2B SDK uploads for COPY steps (gzip or plain).
// The archive is untrusted: member names, link targets and sizes are validated here, and extraction
// walks the destination with openat/O_NOFOLLOW so nothing can ever be written outside it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cove::builder {

// Bad or hostile archive, or a failed write while extracting. Messages name the member (sanitised),
// never a host path.
struct TarError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// fifo and the devices are reported only by a reader constructed with SpecialFiles::report.
enum class EntryType { file, directory, symlink, hardlink, fifo, char_device, block_device };

struct TarEntry {
  std::string path;         // normalised relative path: no leading "./" or "/", no "." or ".." components, no trailing '/'
  EntryType type = EntryType::file;
  uint32_t mode = 0;        // permission bits incl. setuid/setgid/sticky (07777)
  uint64_t size = 0;        // files only (0 for the other types)
  std::string link_target;  // symlink: verbatim; hardlink: normalised relative path of an earlier member
  int64_t mtime = 0;        // seconds since the epoch
  uint32_t uid = 0, gid = 0;            // archived owner (header or pax uid/gid records)
  uint32_t dev_major = 0, dev_minor = 0;  // char_device, block_device
  // pax SCHILY.xattr.<name> records, in archive order; value bytes verbatim.
  std::vector<std::pair<std::string, std::string>> xattrs;
};

// Normalises an archive path: strips leading '/' only when `allow_absolute`, drops "" and "." components
// and a trailing '/'. Throws TarError for '..' components, absolute paths (unless allowed), NUL bytes
// and paths longer than PATH_MAX. `what` names the member in the message. "" means the archive root.
std::string normalise_member_path(const std::string& raw, const std::string& what, bool allow_absolute = false);

// Streams the entries of a tar or tar.gz file (gzip detected by the 1f 8b magic, not by the name).
// Formats: ustar, POSIX pax (path, linkpath, size, mtime records; global headers ignored), GNU long
// names and links ('L'/'K'), GNU base-256 numbers, SCHILY.xattr records. Refuses device and fifo
// members (unless constructed with SpecialFiles::report: image layers have them), sparse files,
// unknown member types, truncated archives, bad checksums and sizes beyond the archive. The first
// zero block ends the archive; an archive that ends without one is truncated. A member naming the
// archive root ("./") is a directory the reader skips.
enum class SpecialFiles { refuse, report };

class TarReader {
 public:
  // TarError if it cannot be opened (no path in the message).
  explicit TarReader(const std::string& archive_path, SpecialFiles special = SpecialFiles::refuse);
  ~TarReader();
  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  // The next member, or nullopt at the end of the archive. Skips any unread data of the previous one.
  std::optional<TarEntry> next();
  // The current file's unread bytes, in pieces of at most 256 KiB. Nothing for other member types or
  // once consumed.
  void read_data(const std::function<void(const char*, size_t)>& sink);

  class Source;  // the byte stream under the tar blocks (plain file or inflated gzip)

 private:
  bool read_block(char* block);  // false at a clean end of input before the block
  void read_exact(char* dst, size_t n, const char* what);
  void skip_exact(uint64_t n);
  std::string read_extension(uint64_t size, uint64_t limit, const std::string& what);
  void skip_rest();

  std::unique_ptr<Source> source_;
  uint64_t remaining_ = 0;  // unread data bytes of the current member
  uint64_t padding_ = 0;    // bytes up to the next 512-byte boundary after them
  std::string current_;     // sanitised name of the current member, for messages
  bool ended_ = false;
  SpecialFiles special_;
};

struct ExtractOwner {
  uint32_t uid = 0, gid = 0;
};

// What extraction may create beyond files, directories and links. Device members are never
// created (a select that does not skip them fails the extraction): they would hand a sandbox
// access to host hardware.
struct ExtractPolicy {
  bool fifos = false;   // create fifo members (else they fail the extraction)
  // Apply xattrs named user.* and security.capability (file capabilities, e.g. ping's) to files
  // and directories; other namespaces (trusted.*, security.selinux, ACLs) are ignored, because
  // trusted.overlay.* would change what overlayfs shows.
  bool xattrs = false;
};

// Extracts the members `select` picks into the directory `dest_dir_fd` (kept open, not closed).
// `select(entry)` returns the destination path relative to the directory ("" = skip; leading '/' is
// read as the directory itself, '..' is refused). Implied parent directories are created 0755;
// directories get their mode and mtime once everything is in place (so a read-only directory still
// receives its children); files are written with their mode (setuid/setgid kept: chmod follows chown)
// and mtime; symlinks are created verbatim and never followed; hardlinks may only point at members
// this call extracted, still regular files. Every component under the directory is opened with
// O_NOFOLLOW relative to its parent's fd, so a symlink from an earlier member can never redirect a
// later write: a member under a symlink or a file fails. Existing entries are replaced (a directory
// over a directory is merged; a non-empty directory is never replaced by something else). Every
// created entry is lchown'ed to `owner`, or to its archived uid/gid when `owner` is nullopt (implied
// parents are then root's). Throws TarError; whatever was extracted before stays.
void extract(TarReader& reader, int dest_dir_fd, const std::function<std::string(const TarEntry&)>& select,
             std::optional<ExtractOwner> owner, const ExtractPolicy& policy = {});

}  // namespace cove::builder
