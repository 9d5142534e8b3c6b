#include "rootfs-builder/tar_reader.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "rootfs-builder/unique_fd.hpp"

namespace cove::builder {

namespace {

constexpr size_t kBlock = 512;
constexpr size_t kPiece = 256 * 1024;            // data pieces handed to read_data's sink
constexpr size_t kInputBuffer = 64 * 1024;       // raw reads from the archive file
constexpr uint64_t kMaxLongName = 64 * 1024;     // GNU 'L'/'K' bodies are held in memory
constexpr uint64_t kMaxPaxHeader = 1024 * 1024;  // so are pax 'x' bodies

// Printable, bounded form of a member name for error messages.
std::string sanitise(const std::string& name) {
  std::string out;
  for (unsigned char c : name.substr(0, 256)) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  if (name.size() > 256) out += "...";
  return out;
}

std::string member(const std::string& name) { return "tar member '" + sanitise(name) + "'"; }

std::string errno_text(int err) { return std::strerror(err); }

// Reads a fixed header field up to its first NUL.
std::string field(const char* block, size_t offset, size_t len) {
  const char* p = block + offset;
  return std::string(p, strnlen(p, len));
}

// Octal (leading spaces allowed, ended by NUL/space) or GNU base-256 (top bit of the first byte set).
int64_t number(const char* block, size_t offset, size_t len, const char* name, const std::string& what) {
  const auto* p = reinterpret_cast<const unsigned char*>(block + offset);
  if (p[0] & 0x80) {
    // 0x80: positive, 0xff: negative (two's complement); the value is the trailing bytes, big-endian.
    const bool negative = p[0] == 0xff;
    if (p[0] != 0x80 && !negative) throw TarError(what + ": " + name + " field out of range");
    uint64_t v = negative ? ~uint64_t{0} : 0;
    for (size_t i = 1; i < len; ++i) {
      if (i + 8 < len) {
        if (p[i] != (negative ? 0xff : 0x00)) throw TarError(what + ": " + name + " field out of range");
        continue;
      }
      v = (v << 8) | p[i];
    }
    const auto r = static_cast<int64_t>(v);
    if ((r < 0) != negative) throw TarError(what + ": " + name + " field out of range");
    return r;
  }
  size_t i = 0;
  while (i < len && p[i] == ' ') ++i;
  uint64_t v = 0;  // an all-blank field reads as 0, as in GNU tar
  for (; i < len && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (v >> 60) throw TarError(what + ": " + name + " field out of range");
    v = v * 8 + (p[i] - '0');
  }
  for (; i < len; ++i) {
    if (p[i] != ' ' && p[i] != '\0') throw TarError(what + ": invalid " + name + " field");
  }
  return static_cast<int64_t>(v);
}

bool header_checksum_ok(const char* block) {
  // The stored sum is taken with the checksum field itself read as spaces; old writers summed signed chars.
  const auto* u = reinterpret_cast<const unsigned char*>(block);
  int64_t unsigned_sum = 0, signed_sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= 148 && i < 156;
    unsigned_sum += in_field ? ' ' : u[i];
    signed_sum += in_field ? ' ' : static_cast<signed char>(block[i]);
  }
  size_t i = 148;
  while (i < 156 && block[i] == ' ') ++i;
  int64_t stored = 0;
  bool digits = false;
  for (; i < 156 && block[i] >= '0' && block[i] <= '7'; ++i) {
    stored = stored * 8 + (block[i] - '0');
    digits = true;
  }
  for (; i < 156; ++i) {
    if (block[i] != ' ' && block[i] != '\0') return false;
  }
  return digits && (stored == unsigned_sum || stored == signed_sum);
}

bool all_zero(const char* block) {
  for (size_t i = 0; i < kBlock; ++i) {
    if (block[i] != 0) return false;
  }
  return true;
}

uint64_t parse_decimal(const std::string& s, const std::string& what, const char* key) {
  if (s.empty() || s.size() > 19) throw TarError(what + ": invalid pax " + key + " record");
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') throw TarError(what + ": invalid pax " + key + " record");
    v = v * 10 + (c - '0');
  }
  return v;
}

// pax mtime: "[-]seconds[.fraction]"; the fraction is dropped.
int64_t parse_pax_time(const std::string& s, const std::string& what) {
  std::string digits = s.substr(0, s.find('.'));
  const bool negative = !digits.empty() && digits[0] == '-';
  if (negative) digits.erase(0, 1);
  const auto v = static_cast<int64_t>(parse_decimal(digits, what, "mtime"));
  return negative ? -v : v;
}

struct PaxRecords {
  std::optional<std::string> path, linkpath;
  std::optional<uint64_t> size;
  std::optional<int64_t> mtime;
  std::optional<uint64_t> uid, gid;
  std::vector<std::pair<std::string, std::string>> xattrs;
};

constexpr std::string_view kXattrPrefix = "SCHILY.xattr.";
constexpr uint64_t kMaxId = 0xfffffffe;  // (uint32_t)-1 means "unchanged" to chown

// Records are "<len> <key>=<value>\n", len counting the whole record.
PaxRecords parse_pax(const std::string& body, const std::string& what) {
  PaxRecords r;
  size_t pos = 0;
  while (pos < body.size()) {
    if (body[pos] == '\0') break;  // some writers pad the body with NULs
    const size_t space = body.find(' ', pos);
    if (space == std::string::npos || space == pos || space - pos > 19) throw TarError(what + ": malformed pax header");
    const uint64_t len = parse_decimal(body.substr(pos, space - pos), what, "length");
    if (len < space - pos + 3 || len > body.size() - pos || body[pos + len - 1] != '\n') {
      throw TarError(what + ": malformed pax header");
    }
    const std::string record = body.substr(space + 1, pos + len - 1 - (space + 1));
    const size_t eq = record.find('=');
    if (eq == std::string::npos || eq == 0) throw TarError(what + ": malformed pax header");
    const std::string key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") r.path = value;
    else if (key == "linkpath") r.linkpath = value;
    else if (key == "size") r.size = parse_decimal(value, what, "size");
    else if (key == "mtime") r.mtime = parse_pax_time(value, what);
    else if (key == "uid") r.uid = parse_decimal(value, what, "uid");
    else if (key == "gid") r.gid = parse_decimal(value, what, "gid");
    else if (key.rfind(kXattrPrefix, 0) == 0 && key.size() > kXattrPrefix.size()) {
      r.xattrs.emplace_back(key.substr(kXattrPrefix.size()), value);
    }
    else if (key.rfind("GNU.sparse.", 0) == 0) throw TarError(what + ": sparse files are not supported");
    // uname/gname/atime/ctime/charset/comment and vendor keys do not matter here.
    pos += len;
  }
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Byte sources

class TarReader::Source {
 public:
  virtual ~Source() = default;
  // Up to n bytes; 0 only at the end of the input. Throws TarError on read or decompression errors.
  virtual size_t read(char* dst, size_t n) = 0;
  // Bytes known to remain (plain files only), to refuse sizes beyond the archive before writing.
  virtual std::optional<uint64_t> remaining() const { return std::nullopt; }
  // Called at the end-of-archive marker.
  virtual void finish() {}
};

namespace {

size_t read_fd(int fd, char* dst, size_t n) {
  for (;;) {
    const ssize_t got = ::read(fd, dst, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) throw TarError("cannot read the archive: " + errno_text(errno));
  }
}

class PlainSource : public TarReader::Source {
 public:
  PlainSource(int fd, uint64_t file_size) : fd_(fd), left_(file_size), buf_(kInputBuffer) {}
  ~PlainSource() override { ::close(fd_); }

  size_t read(char* dst, size_t n) override {
    if (pos_ == end_) {
      // Large reads go straight to the caller; small ones (headers) through the buffer.
      if (n >= buf_.size()) return account(read_fd(fd_, dst, n));
      pos_ = 0;
      end_ = read_fd(fd_, buf_.data(), buf_.size());
      if (end_ == 0) return 0;
    }
    const size_t take = std::min(n, end_ - pos_);
    std::memcpy(dst, buf_.data() + pos_, take);
    pos_ += take;
    return account(take);
  }
  std::optional<uint64_t> remaining() const override { return left_; }
  // Trailing bytes after the marker (record padding) are not read: nothing checks them.

 private:
  size_t account(size_t n) {
    left_ -= std::min<uint64_t>(left_, n);
    return n;
  }
  int fd_;
  uint64_t left_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
};

class GzipSource : public TarReader::Source {
 public:
  explicit GzipSource(int fd) : fd_(fd), in_(kInputBuffer) {
    std::memset(&z_, 0, sizeof z_);
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) {  // 16+: gzip wrapper only
      ::close(fd_);
      throw TarError("cannot initialise gzip decompression");
    }
  }
  ~GzipSource() override {
    inflateEnd(&z_);
    ::close(fd_);
  }

  size_t read(char* dst, size_t n) override {
    if (n == 0) return 0;
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    const uInt wanted = z_.avail_out;
    while (z_.avail_out == wanted) {
      if (z_.avail_in == 0 && !eof_) {
        const size_t got = read_fd(fd_, reinterpret_cast<char*>(in_.data()), in_.size());
        if (got == 0) eof_ = true;
        z_.next_in = in_.data();
        z_.avail_in = static_cast<uInt>(got);
      }
      if (stream_ended_) {
        // Concatenated gzip members form one stream (gzip(1) and zlib's gzread agree).
        if (z_.avail_in == 0 && eof_) return 0;
        if (z_.avail_in == 0) continue;
        if (inflateReset(&z_) != Z_OK) throw TarError("corrupt gzip data");
        stream_ended_ = false;
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        stream_ended_ = true;
      } else if (rc == Z_BUF_ERROR) {
        if (z_.avail_in > 0) throw TarError("corrupt gzip data");
        if (eof_) throw TarError("truncated archive: the gzip stream ends early");
      } else if (rc != Z_OK) {
        throw TarError("corrupt gzip data");
      }
    }
    return wanted - z_.avail_out;
  }

  // Reads the stream to its end so that zlib checks the CRC and length trailer: a corrupt or cut
  // upload fails even when the damage lies past the tar's end marker. Bounded: record padding is
  // small, anything large there is not padding.
  void finish() override {
    constexpr size_t kMaxTrailing = 16 * 1024 * 1024;
    std::vector<char> scratch(64 * 1024);
    size_t total = 0;
    while (const size_t got = read(scratch.data(), scratch.size())) {
      total += got;
      if (total > kMaxTrailing) throw TarError("too much data after the end of the archive");
    }
  }

 private:
  int fd_;
  z_stream z_;
  std::vector<Bytef> in_;
  bool eof_ = false, stream_ended_ = false;
};

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Reader

std::string normalise_member_path(const std::string& raw, const std::string& what, bool allow_absolute) {
  if (raw.find('\0') != std::string::npos) throw TarError(what + ": name contains a NUL byte");
  if (!raw.empty() && raw[0] == '/' && !allow_absolute) throw TarError(what + ": absolute paths are not allowed");
  std::string out;
  size_t pos = 0;
  while (pos <= raw.size()) {
    size_t slash = raw.find('/', pos);
    if (slash == std::string::npos) slash = raw.size();
    const std::string part = raw.substr(pos, slash - pos);
    pos = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") throw TarError(what + ": '..' path components are not allowed");
    if (!out.empty()) out += '/';
    out += part;
  }
  if (out.size() >= PATH_MAX) throw TarError(what + ": path too long");
  return out;
}

TarReader::TarReader(const std::string& archive_path, SpecialFiles special) : special_(special) {
  const int fd = ::open(archive_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw TarError("cannot open the archive: " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw TarError("the archive is not a regular file");
  }
  unsigned char magic[2] = {0, 0};
  ssize_t got;
  do got = ::pread(fd, magic, 2, 0);
  while (got < 0 && errno == EINTR);
  if (got < 0) {
    const int err = errno;
    ::close(fd);
    throw TarError("cannot read the archive: " + errno_text(err));
  }
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) source_ = std::make_unique<GzipSource>(fd);
  else source_ = std::make_unique<PlainSource>(fd, static_cast<uint64_t>(st.st_size));
}

TarReader::~TarReader() = default;

void TarReader::read_exact(char* dst, size_t n, const char* what) {
  while (n > 0) {
    const size_t got = source_->read(dst, n);
    if (got == 0) throw TarError(std::string("truncated archive: ") + what);
    dst += got;
    n -= got;
  }
}

bool TarReader::read_block(char* block) {
  const size_t got = source_->read(block, kBlock);
  if (got == 0) return false;
  read_exact(block + got, kBlock - got, "a header is cut short");
  return true;
}

void TarReader::skip_exact(uint64_t n) {
  std::array<char, 16 * 1024> scratch;
  while (n > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(n, scratch.size()));
    read_exact(scratch.data(), want, ("the data of " + member(current_) + " is cut short").c_str());
    n -= want;
  }
}

void TarReader::skip_rest() {
  skip_exact(remaining_ + padding_);
  remaining_ = padding_ = 0;
}

std::string TarReader::read_extension(uint64_t size, uint64_t limit, const std::string& what) {
  if (size > limit) throw TarError(what + " is too large");
  std::string body(size, '\0');
  read_exact(body.data(), body.size(), "an extended header is cut short");
  skip_exact((kBlock - size % kBlock) % kBlock);
  return body;
}

std::optional<TarEntry> TarReader::next() {
  if (ended_) return std::nullopt;
  skip_rest();

  std::optional<std::string> long_name, long_link;
  PaxRecords pax;
  bool pending_extension = false;
  char block[kBlock];
  for (;;) {
    if (!read_block(block)) {
      throw TarError(pending_extension ? "truncated archive: an extended header has no member"
                                       : "truncated archive: no end-of-archive marker");
    }
    if (all_zero(block)) {
      if (pending_extension) throw TarError("truncated archive: an extended header has no member");
      ended_ = true;
      source_->finish();
      return std::nullopt;
    }
    const std::string raw_name = field(block, 0, 100);
    if (!header_checksum_ok(block)) throw TarError(member(raw_name) + ": bad header checksum");

    const bool posix_ustar = std::memcmp(block + 257, "ustar\0", 6) == 0;
    std::string name = raw_name;
    const std::string prefix = posix_ustar ? field(block, 345, 155) : std::string();
    if (!prefix.empty()) name = prefix + "/" + name;
    if (pax.path) name = *pax.path;
    else if (long_name) name = *long_name;
    const std::string what = member(name);

    const int64_t header_size = number(block, 124, 12, "size", what);
    if (header_size < 0) throw TarError(what + ": negative size");
    const uint64_t size = pax.size ? *pax.size : static_cast<uint64_t>(header_size);
    if (const auto left = source_->remaining(); left && size > *left) {
      throw TarError(what + ": size is beyond the end of the archive");
    }

    const char type = block[156];
    switch (type) {
      case 'x': pax = parse_pax(read_extension(size, kMaxPaxHeader, what + ": pax header"), what);
        pending_extension = true;
        continue;
      case 'g': skip_exact(size + (kBlock - size % kBlock) % kBlock);  // global defaults: ignored
        continue;
      case 'L': {
        std::string body = read_extension(size, kMaxLongName, what + ": GNU long name");
        long_name = body.substr(0, strnlen(body.data(), body.size()));
        pending_extension = true;
        continue;
      }
      case 'K': {
        std::string body = read_extension(size, kMaxLongName, what + ": GNU long link");
        long_link = body.substr(0, strnlen(body.data(), body.size()));
        pending_extension = true;
        continue;
      }
      default: break;
    }

    TarEntry e;
    std::string link = pax.linkpath ? *pax.linkpath : long_link ? *long_link : field(block, 157, 100);
    switch (type) {
      case '0': case '\0': case '7': e.type = EntryType::file; break;
      case '1': e.type = EntryType::hardlink; break;
      case '2': e.type = EntryType::symlink; break;
      case '5': e.type = EntryType::directory; break;
      case '3':
        if (special_ != SpecialFiles::report) throw TarError(what + ": character devices are not allowed");
        e.type = EntryType::char_device;
        break;
      case '4':
        if (special_ != SpecialFiles::report) throw TarError(what + ": block devices are not allowed");
        e.type = EntryType::block_device;
        break;
      case '6':
        if (special_ != SpecialFiles::report) throw TarError(what + ": fifos are not allowed");
        e.type = EntryType::fifo;
        break;
      case 'S': throw TarError(what + ": sparse files are not supported");
      default: {
        const auto c = static_cast<unsigned char>(type);
        throw TarError(what + ": unsupported member type " +
                       (c >= 0x20 && c < 0x7f ? "'" + std::string(1, type) + "'" : std::to_string(c)));
      }
    }
    // Pre-POSIX archives mark directories by a trailing slash on a regular-file entry.
    if (e.type == EntryType::file && type == '\0' && !name.empty() && name.back() == '/') e.type = EntryType::directory;

    e.path = normalise_member_path(name, what);
    e.mode = static_cast<uint32_t>(number(block, 100, 8, "mode", what)) & 07777;
    e.mtime = pax.mtime ? *pax.mtime : number(block, 136, 12, "mtime", what);
    const int64_t header_uid = number(block, 108, 8, "uid", what), header_gid = number(block, 116, 8, "gid", what);
    const uint64_t uid = pax.uid ? *pax.uid : static_cast<uint64_t>(header_uid);
    const uint64_t gid = pax.gid ? *pax.gid : static_cast<uint64_t>(header_gid);
    if (header_uid < 0 || header_gid < 0 || uid > kMaxId || gid > kMaxId) throw TarError(what + ": owner id out of range");
    e.uid = static_cast<uint32_t>(uid);
    e.gid = static_cast<uint32_t>(gid);
    if (e.type == EntryType::char_device || e.type == EntryType::block_device) {
      const int64_t major = number(block, 329, 8, "devmajor", what), minor = number(block, 337, 8, "devminor", what);
      if (major < 0 || minor < 0 || major > 0xfff || minor > 0xfffff) throw TarError(what + ": device number out of range");
      e.dev_major = static_cast<uint32_t>(major);
      e.dev_minor = static_cast<uint32_t>(minor);
    }
    e.xattrs = std::move(pax.xattrs);
    if (e.type == EntryType::file) e.size = size;
    if (e.type == EntryType::symlink) {
      if (link.empty()) throw TarError(what + ": symlink without a target");
      if (link.find('\0') != std::string::npos) throw TarError(what + ": link target contains a NUL byte");
      e.link_target = link;
    } else if (e.type == EntryType::hardlink) {
      e.link_target = normalise_member_path(link, what + " (hardlink target)");
      if (e.link_target.empty()) throw TarError(what + ": hardlink to the archive root");
    }
    if (e.path.empty() && e.type != EntryType::directory) throw TarError(what + ": empty member name");

    current_ = e.path;
    remaining_ = size;  // data following non-file headers is skipped, never interpreted
    padding_ = (kBlock - size % kBlock) % kBlock;
    if (e.path.empty()) {  // "./": the archive root itself
      skip_rest();
      long_name.reset(), long_link.reset(), pax = PaxRecords{}, pending_extension = false;
      continue;
    }
    return e;
  }
}

void TarReader::read_data(const std::function<void(const char*, size_t)>& sink) {
  if (remaining_ == 0) return;
  std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(remaining_, kPiece)));
  while (remaining_ > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(remaining_, buf.size()));
    const size_t got = source_->read(buf.data(), want);
    if (got == 0) throw TarError("truncated archive: the data of " + member(current_) + " is cut short");
    remaining_ -= got;
    sink(buf.data(), got);
  }
}

// ---------------------------------------------------------------------------------------------------
// Extraction

namespace {

struct Parent {
  UniqueFd fd;       // the directory holding the final component (-1 = the destination root)
  std::string name;  // the final component
  int at(int root) const { return fd.get() >= 0 ? fd.get() : root; }
};

std::vector<std::string> split(const std::string& rel) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos < rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string::npos) slash = rel.size();
    parts.push_back(rel.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return parts;
}

bool xattr_allowed(const std::string& name) {
  return (name.rfind("user.", 0) == 0 && name.size() > 5) || name == "security.capability";
}

class Extractor {
 public:
  Extractor(int root, std::optional<ExtractOwner> owner, const ExtractPolicy& policy)
      : root_(root), owner_(owner), policy_(policy) {}

  void directory(const TarEntry& e, const std::string& dest, const std::string& what) {
    if (dest.empty()) return;  // the destination itself: merged, left as it is
    Parent p = parent_of(dest, what);
    struct stat st {};
    if (::fstatat(p.at(root_), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      // merge
    } else {
      make_room(p, what);
      if (::mkdirat(p.at(root_), p.name.c_str(), 0700) != 0) fail(what, "cannot create the directory", errno);
      chown_at(p, e, what);
    }
    if (policy_.xattrs && !e.xattrs.empty()) {
      UniqueFd dir(::openat(p.at(root_), p.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (dir.get() < 0) fail(what, "cannot open the directory", errno);
      set_xattrs(dir.get(), e, what);
    }
    // Archived owners also apply to a directory met earlier as an implied parent.
    deferred_dirs_.push_back({dest, e.mode, e.mtime, !owner_, e.uid, e.gid});
  }

  void fifo(const TarEntry& e, const std::string& dest, const std::string& what) {
    if (!policy_.fifos) throw TarError(what + ": fifos are not allowed");
    Parent p = parent_of(dest, what);
    make_room(p, what);
    if (::mkfifoat(p.at(root_), p.name.c_str(), 0600) != 0) fail(what, "cannot create the fifo", errno);
    chown_at(p, e, what);
    // No symlink can stand here: the fifo was just made in a directory opened without following links.
    if (::fchmodat(p.at(root_), p.name.c_str(), e.mode, 0) != 0) fail(what, "cannot set the mode", errno);
    const struct timespec times[2] = {{e.mtime, 0}, {e.mtime, 0}};
    (void)::utimensat(p.at(root_), p.name.c_str(), times, AT_SYMLINK_NOFOLLOW);
  }

  void file(TarReader& reader, const TarEntry& e, const std::string& dest, const std::string& what) {
    Parent p = parent_of(dest, what);
    make_room(p, what);
    // O_EXCL after unlinking: never writes through an existing link or into another member's inode.
    UniqueFd fd(::openat(p.at(root_), p.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0) fail(what, "cannot create the file", errno);
    reader.read_data([&](const char* data, size_t n) {
      while (n > 0) {
        const ssize_t w = ::write(fd.get(), data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) fail(what, "cannot write the file", errno);
        data += w;
        n -= static_cast<size_t>(w);
      }
    });
    // chown clears setuid/setgid and file capabilities, so the mode and xattrs come after it.
    const auto [uid, gid] = ids(e);
    if (::fchown(fd.get(), uid, gid) != 0) fail(what, "cannot set the owner", errno);
    if (::fchmod(fd.get(), e.mode) != 0) fail(what, "cannot set the mode", errno);
    if (policy_.xattrs) set_xattrs(fd.get(), e, what);
    const struct timespec times[2] = {{e.mtime, 0}, {e.mtime, 0}};
    if (::futimens(fd.get(), times) != 0) fail(what, "cannot set the mtime", errno);
    extracted_[e.path] = dest;
  }

  void symlink(const TarEntry& e, const std::string& dest, const std::string& what) {
    Parent p = parent_of(dest, what);
    make_room(p, what);
    if (::symlinkat(e.link_target.c_str(), p.at(root_), p.name.c_str()) != 0) {
      fail(what, "cannot create the symlink", errno);
    }
    chown_at(p, e, what);
    const struct timespec times[2] = {{e.mtime, 0}, {e.mtime, 0}};
    (void)::utimensat(p.at(root_), p.name.c_str(), times, AT_SYMLINK_NOFOLLOW);  // cosmetic
  }

  void hardlink(const TarEntry& e, const std::string& dest, const std::string& what) {
    const auto it = extracted_.find(e.link_target);
    if (it == extracted_.end()) {
      throw TarError(what + ": hardlink target '" + sanitise(e.link_target) + "' is not an extracted file");
    }
    Parent target = parent_of(it->second, what);
    struct stat st {};
    if (::fstatat(target.at(root_), target.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      throw TarError(what + ": hardlink target '" + sanitise(e.link_target) + "' is no longer a regular file");
    }
    if (dest == it->second) return;  // a link to itself: already there
    Parent p = parent_of(dest, what);
    make_room(p, what);
    // No AT_SYMLINK_FOLLOW: links the checked inode, never what a symlink points at.
    if (::linkat(target.at(root_), target.name.c_str(), p.at(root_), p.name.c_str(), 0) != 0) {
      fail(what, "cannot create the hardlink", errno);
    }
    extracted_[e.path] = dest;
  }

  // Directory modes and mtimes last: children no longer need write access and no longer touch the mtime.
  void finish() {
    for (const auto& d : deferred_dirs_) {
      const auto parts = split(d.dest);
      UniqueFd dir = walk(parts, parts.size(), "", false);
      if (dir.get() < 0) continue;  // replaced by a later member
      const std::string what = member(d.dest);
      if (d.chown && ::fchown(dir.get(), d.uid, d.gid) != 0) fail(what, "cannot set the owner", errno);
      if (::fchmod(dir.get(), d.mode) != 0) fail(what, "cannot set the mode", errno);
      const struct timespec times[2] = {{d.mtime, 0}, {d.mtime, 0}};
      if (::futimens(dir.get(), times) != 0) fail(what, "cannot set the mtime", errno);
    }
  }

 private:
  struct Deferred {
    std::string dest;
    uint32_t mode;
    int64_t mtime;
    bool chown;
    uint32_t uid, gid;
  };

  [[noreturn]] void fail(const std::string& what, const char* action, int err) {
    throw TarError(what + ": " + action + ": " + errno_text(err));
  }

  std::pair<uint32_t, uint32_t> ids(const TarEntry& e) const {
    return owner_ ? std::pair{owner_->uid, owner_->gid} : std::pair{e.uid, e.gid};
  }
  // Implied parents: the fixed owner, or root when archived owners are kept.
  std::pair<uint32_t, uint32_t> parent_ids() const {
    return owner_ ? std::pair{owner_->uid, owner_->gid} : std::pair{0u, 0u};
  }

  void chown_at(const Parent& p, const TarEntry& e, const std::string& what) {
    const auto [uid, gid] = ids(e);
    if (::fchownat(p.at(root_), p.name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
      fail(what, "cannot set the owner", errno);
    }
  }

  void set_xattrs(int fd, const TarEntry& e, const std::string& what) {
    for (const auto& [name, value] : e.xattrs) {
      if (!xattr_allowed(name)) continue;
      if (::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) != 0) {
        fail(what + " (xattr '" + sanitise(name) + "')", "cannot set the xattr", errno);
      }
    }
  }

  // Opens parts[0..count) one by one below the root, each with O_NOFOLLOW. With `create`, missing
  // directories are made (0755, owned by the owner). Without it, a missing or non-directory component
  // returns -1 when `what` is empty and throws otherwise.
  UniqueFd walk(const std::vector<std::string>& parts, size_t count, const std::string& what, bool create) {
    UniqueFd cur;
    for (size_t i = 0; i < count; ++i) {
      const int at = cur.get() >= 0 ? cur.get() : root_;
      const char* name = parts[i].c_str();
      int fd = ::openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT && create) {
        if (::mkdirat(at, name, 0755) != 0 && errno != EEXIST) fail(what, "cannot create a parent directory", errno);
        fd = ::openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
          const auto [uid, gid] = parent_ids();
          if (::fchown(fd, uid, gid) != 0 || ::fchmod(fd, 0755) != 0) {
            const int err = errno;
            ::close(fd);
            fail(what, "cannot set up a parent directory", err);
          }
        }
      }
      if (fd < 0) {
        const int err = errno;
        if (what.empty()) return UniqueFd();
        if (err == ELOOP || err == ENOTDIR) {
          std::string sofar;
          for (size_t j = 0; j <= i; ++j) sofar += (j ? "/" : "") + parts[j];
          throw TarError(what + ": parent '" + sanitise(sofar) + "' is a symlink or not a directory");
        }
        fail(what, "cannot open a parent directory", err);
      }
      cur = UniqueFd(fd);
    }
    return cur;
  }

  Parent parent_of(const std::string& dest, const std::string& what) {
    auto parts = split(dest);
    Parent p;
    p.name = parts.back();
    if (parts.size() > 1) p.fd = walk(parts, parts.size() - 1, what, true);
    return p;
  }

  // Clears the final component for a new entry: anything but a non-empty directory goes.
  void make_room(const Parent& p, const std::string& what) {
    if (::unlinkat(p.at(root_), p.name.c_str(), 0) == 0 || errno == ENOENT) return;
    if (errno == EISDIR || errno == EPERM) {
      if (::unlinkat(p.at(root_), p.name.c_str(), AT_REMOVEDIR) == 0) return;
      if (errno == ENOTEMPTY || errno == EEXIST) {
        throw TarError(what + ": a non-empty directory is in the way");
      }
    }
    fail(what, "cannot replace the existing entry", errno);
  }

  int root_;
  std::optional<ExtractOwner> owner_;
  ExtractPolicy policy_;
  std::unordered_map<std::string, std::string> extracted_;  // archive path -> destination (files, hardlinks)
  std::vector<Deferred> deferred_dirs_;
};

}  // namespace

void extract(TarReader& reader, int dest_dir_fd, const std::function<std::string(const TarEntry&)>& select,
             std::optional<ExtractOwner> owner, const ExtractPolicy& policy) {
  Extractor x(dest_dir_fd, owner, policy);
  while (auto e = reader.next()) {
    const std::string chosen = select(*e);
    if (chosen.empty()) continue;
    const std::string what = member(e->path);
    // Leading '/' is the destination directory itself (a layer is a root); '..' never leaves it.
    const std::string dest = normalise_member_path(chosen, what + " (destination)", true);
    if (dest.empty() && e->type != EntryType::directory) {
      throw TarError(what + ": cannot replace the destination directory itself");
    }
    switch (e->type) {
      case EntryType::directory: x.directory(*e, dest, what); break;
      case EntryType::file: x.file(reader, *e, dest, what); break;
      case EntryType::symlink: x.symlink(*e, dest, what); break;
      case EntryType::hardlink: x.hardlink(*e, dest, what); break;
      case EntryType::fifo: x.fifo(*e, dest, what); break;
      case EntryType::char_device:
      case EntryType::block_device: throw TarError(what + ": device nodes are not extracted");
    }
  }
  x.finish();
}

}  // namespace cove::builder
