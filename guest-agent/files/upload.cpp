#include "files/upload.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <nlohmann/json.hpp>
#include <vector>

#include "files/media_type.hpp"
#include "system/go_errors.hpp"
#include "filesystem/ensure_dirs.hpp"
#include "system/paths.hpp"

namespace cove::files {
namespace {

constexpr int kMaxSymlinkHops = 40;

std::string random_hex(size_t bytes) {
  unsigned char buf[16];
  bytes = std::min(bytes, sizeof buf);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      // Unreachable on Linux >= 3.17; fall back to something unique enough for a temp name.
      for (; got < bytes; ++got) buf[got] = static_cast<unsigned char>((getpid() * 131 + got * 17 + time(nullptr)) & 0xff);
      break;
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    out += kHex[buf[i] >> 4];
    out += kHex[buf[i] & 0xf];
  }
  return out;
}

// Follows a chain of symlinks at `path` (the last element only, as open(2) would before
// creating). Returns the path a write would land on; `err` set on failure (e.g. ELOOP).
std::string follow_symlinks(std::string path, int& err) {
  for (int hop = 0; hop <= kMaxSymlinkHops; ++hop) {
    struct stat st{};
    if (lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return path;
      err = errno;
      return path;
    }
    if (!S_ISLNK(st.st_mode)) return path;
    std::string link(static_cast<size_t>(st.st_size > 0 ? st.st_size : 256) + 1, '\0');
    ssize_t n = readlink(path.c_str(), link.data(), link.size());
    if (n < 0) {
      err = errno;
      return path;
    }
    link.resize(static_cast<size_t>(n));
    path = !link.empty() && link[0] == '/' ? link : system::clean_path(path_dir(path) + "/" + link);
  }
  err = ELOOP;
  return path;
}

}  // namespace

std::string path_dir(std::string_view path) {
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  return system::clean_path(path.substr(0, slash + 1));
}

std::string path_base(std::string_view path) {
  if (path.empty()) return ".";
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path == "/") return "/";
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string upload_response_json(const std::vector<UploadedFile>& files) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : files) {
    nlohmann::json e = nlohmann::json::object();
    if (!f.metadata.empty()) e["metadata"] = f.metadata;
    e["name"] = f.name;
    e["path"] = f.path;
    e["type"] = "file";
    arr.push_back(std::move(e));
  }
  return arr.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// ---- AtomicFileWriter ----

namespace {

std::optional<std::uint64_t> mount_id(const std::string& path, dev_t& dev) {
  struct statx stx{};
  if (statx(AT_FDCWD, path.c_str(), AT_STATX_DONT_SYNC, STATX_MNT_ID | STATX_BASIC_STATS, &stx) != 0) {
    return std::nullopt;
  }
  dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
  if (!(stx.stx_mask & STATX_MNT_ID)) return 0;  // old kernel: the device number alone decides
  return stx.stx_mnt_id;
}

// Links an open O_TMPFILE inode at `path` (AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the
// /proc/self/fd route does not).
int link_tmpfile(int fd, const std::string& path) {
  if (linkat(fd, "", AT_FDCWD, path.c_str(), AT_EMPTY_PATH) == 0) return 0;
  if (errno != ENOENT && errno != EPERM && errno != EINVAL) return errno;
  std::string proc = "/proc/self/fd/" + std::to_string(fd);
  if (linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
  return errno;
}

}  // namespace

std::string mount_root_of(const std::string& dir) {
  char* real = realpath(dir.c_str(), nullptr);
  if (!real) return dir;
  std::string path = real;
  free(real);
  dev_t dev = 0;
  auto id = mount_id(path, dev);
  if (!id) return path;
  while (path != "/") {
    std::string parent = path_dir(path);
    dev_t parent_dev = 0;
    auto parent_id = mount_id(parent, parent_dev);
    if (!parent_id || *parent_id != *id || parent_dev != dev) break;
    path = parent;
  }
  return path;
}

std::unique_ptr<AtomicFileWriter> AtomicFileWriter::open(const std::string& target, uid_t uid, gid_t gid,
                                                         std::int64_t content_length, TransferError& error) {
  std::string ensure_error;
  if (!filesystem::ensure_dirs(path_dir(target), uid, gid, ensure_error)) {
    error.set(500, "error ensuring directories: " + ensure_error);
    return nullptr;
  }
  int link_err = 0;
  std::string final_path = follow_symlinks(target, link_err);
  if (link_err != 0) {
    error.set(500, "error getting file info: " + system::path_error("stat", target, link_err));
    return nullptr;
  }
  struct stat st{};
  bool exists = stat(final_path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) {
    error.set(500, "error getting file info: " + system::path_error("stat", target, errno));
    return nullptr;
  }
  if (exists && S_ISDIR(st.st_mode)) {
    error.set(400, "path is a directory: " + target);
    return nullptr;
  }

  std::unique_ptr<AtomicFileWriter> w(new AtomicFileWriter());
  w->target_ = target;
  w->final_ = final_path;
  w->content_length_ = content_length;
  w->uid_ = uid;
  w->gid_ = gid;

  if (exists && !S_ISREG(st.st_mode)) {
    // A device or FIFO: there is nothing to replace atomically; write into it as envd does.
    // O_NONBLOCK so a FIFO without a reader fails instead of stalling the agent's one thread.
    if (chown(final_path.c_str(), uid, gid) != 0) {
      error.set(500, "error changing file ownership: " + system::path_error("chown", target, errno));
      return nullptr;
    }
    int fd = ::open(final_path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      int e = errno;
      if (e == ENOSPC) {
        error.set(507, "not enough inodes available: " + system::path_error("open", target, e));
      } else {
        error.set(500, "error opening file: " + system::path_error("open", target, e));
      }
      return nullptr;
    }
    w->fd_ = Fd(fd);
    w->staging_ = Staging::in_place;
    return w;
  }

  const std::string dir = path_dir(final_path);
  const std::string root = mount_root_of(dir);
  // Candidates, best first: unnamed at the mount root, named at the mount root, then the same two
  // in the target's directory (when the root is not writable, or is the directory itself).
  struct Candidate {
    std::string dir;
    bool unnamed;
  };
  std::vector<Candidate> candidates{{root, true}, {root, false}};
  if (root != dir) {
    candidates.push_back({dir, true});
    candidates.push_back({dir, false});  // last: its error is the one reported, as envd's open
  }
  const std::string base = path_base(final_path).substr(0, 200);  // short enough for NAME_MAX
  int last_err = 0;
  for (const auto& c : candidates) {
    int fd = -1;
    std::string temp;
    if (c.unnamed) {
      fd = ::open(c.dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
    } else {
      for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
        temp = c.dir + (c.dir == "/" ? "" : "/") + "." + base + ".cove-upload." + random_hex(8);
        fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
      }
    }
    if (fd >= 0) {
      w->fd_ = Fd(fd);
      w->staging_ = c.unnamed ? Staging::unnamed : Staging::named;
      w->staging_dir_ = c.dir;
      w->temp_ = temp;
      break;
    }
    last_err = errno;
    if (last_err == ENOSPC || last_err == EDQUOT) break;  // the filesystem is full: no point going on
  }
  if (!w->fd_) {
    if (last_err == ENOSPC) {
      error.set(507, "not enough inodes available: " + system::path_error("open", target, last_err));
    } else {
      error.set(500, "error opening file: " + system::path_error("open", target, last_err));
    }
    return nullptr;
  }
  if (fchown(w->fd_.get(), uid, gid) != 0) {
    error.set(500, "error changing file ownership: " + system::path_error("chown", target, errno));
    return nullptr;  // the destructor drops the staged file
  }
  // An existing file keeps its permission bits (a chown clears set-id bits, so do they here).
  if (exists && fchmod(w->fd_.get(), st.st_mode & 01777) != 0) {
    error.set(500, "error changing file mode: " + system::path_error("chmod", target, errno));
    return nullptr;
  }
  return w;
}

AtomicFileWriter::~AtomicFileWriter() { abort(); }

void AtomicFileWriter::abort() {
  if (done_) return;
  done_ = true;
  fd_.reset();  // an unnamed file vanishes with its last descriptor
  if (staging_ == Staging::named && !temp_.empty()) unlink(temp_.c_str());
}

void AtomicFileWriter::write_error(int e, TransferError& error) {
  if (e == ENOSPC) {
    std::string msg = "not enough disk space available";
    if (content_length_ > 0) msg = "attempted to write " + std::to_string(content_length_) + " bytes: " + msg;
    error.set(507, msg);
  } else {
    error.set(500, "error writing file: " + system::path_error("write", target_, e));
  }
}

bool AtomicFileWriter::write(std::string_view data, TransferError& error) {
  while (!data.empty()) {
    ssize_t n = ::write(fd_.get(), data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      write_error(errno, error);
      abort();
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
    size_ += static_cast<std::uint64_t>(n);
  }
  return true;
}

// Last resort when the staged inode cannot be moved to the target's directory: copy it in.
bool AtomicFileWriter::copy_into_target(TransferError& error) {
  if (!fd_ && staging_ == Staging::named) {
    int in = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      error.set(500, "error writing file: " + system::path_error("open", target_, errno));
      return false;
    }
    fd_ = Fd(in);
  }
  int out = ::open(final_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (out < 0) {
    int e = errno;
    error.set(e == ENOSPC ? 507 : 500, (e == ENOSPC ? "not enough inodes available: " : "error opening file: ") +
                                           system::path_error("open", target_, e));
    return false;
  }
  Fd dst(out);
  if (fchown(out, uid_, gid_) != 0) {
    error.set(500, "error changing file ownership: " + system::path_error("chown", target_, errno));
    return false;
  }
  loff_t in_off = 0;
  while (static_cast<std::uint64_t>(in_off) < size_) {
    const size_t left = static_cast<size_t>(size_ - static_cast<std::uint64_t>(in_off));
    ssize_t n = copy_file_range(fd_.get(), &in_off, out, nullptr, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS)) {
      char buf[64 * 1024];  // plain copy
      n = pread(fd_.get(), buf, std::min(sizeof buf, left), in_off);
      if (n > 0) {
        for (ssize_t off = 0; off < n;) {
          ssize_t w = ::write(out, buf + off, static_cast<size_t>(n - off));
          if (w < 0 && errno == EINTR) continue;
          if (w < 0) {
            write_error(errno, error);
            return false;
          }
          off += w;
        }
        in_off += n;
        continue;
      }
    }
    if (n <= 0) {
      write_error(n < 0 ? errno : EIO, error);
      return false;
    }
  }
  return true;
}

bool AtomicFileWriter::publish(TransferError& error) {
  // Whatever keeps the staged inode from moving to the target (EXDEV across XFS project quotas,
  // a filesystem without linkat of unnamed files, ...) falls back to copying its content in.
  if (staging_ == Staging::named) {
    if (rename(temp_.c_str(), final_.c_str()) == 0) return true;
    return copy_into_target(error);
  }
  // Unnamed: a new target is linked in place; an existing one is replaced by a rename.
  struct stat st{};
  if (lstat(final_.c_str(), &st) != 0 && errno == ENOENT) {
    int e = link_tmpfile(fd_.get(), final_);
    if (e == 0) return true;
    if (e != EEXIST) return copy_into_target(error);  // EEXIST: created meanwhile, replace it
  }
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string temp = staging_dir_ + (staging_dir_ == "/" ? "" : "/") + "." + path_base(final_).substr(0, 200) +
                       ".cove-upload." + random_hex(8);
    int e = link_tmpfile(fd_.get(), temp);
    if (e == EEXIST) continue;
    if (e != 0) break;
    if (rename(temp.c_str(), final_.c_str()) == 0) return true;
    unlink(temp.c_str());
    break;
  }
  return copy_into_target(error);
}

bool AtomicFileWriter::commit(const Metadata& metadata, UploadedFile& out, TransferError& error) {
  out.path = target_;
  out.name = path_base(target_);
  if (staging_ == Staging::in_place) {
    done_ = true;
    if (fd_.close() != 0) {
      write_error(errno, error);
      return false;
    }
    return true;
  }
  std::string why;
  if (int e = replace_metadata(fd_.get(), metadata, why); e != 0) {
    error.set(e == ENOSPC || e == EDQUOT ? 507 : 500, "error writing metadata: " + why);
    abort();
    return false;
  }
  out.metadata = read_metadata(fd_.get());
  if (staging_ == Staging::named && fd_.close() != 0) {  // late write errors (NFS) surface here
    write_error(errno, error);
    abort();
    return false;
  }
  if (!publish(error)) {
    abort();
    return false;
  }
  done_ = true;
  fd_.reset();
  if (staging_ == Staging::named) unlink(temp_.c_str());  // left only by the copy fallback
  // Report a write on the target's own name (watchers see IN_MODIFY as envd's in-place write
  // produces it); a truncate to the current size changes nothing else.
  int touch = ::open(final_.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (touch >= 0) {
    struct stat st{};
    if (fstat(touch, &st) == 0 && S_ISREG(st.st_mode)) (void)!ftruncate(touch, st.st_size);
    ::close(touch);
  }
  return true;
}

// ---- sinks ----

namespace {

class RawSink final : public UploadSink {
 public:
  RawSink(UploadOptions options, std::unique_ptr<AtomicFileWriter> writer)
      : options_(std::move(options)), writer_(std::move(writer)) {}

  bool write(std::string_view data) override {
    if (error_) return false;
    return writer_->write(data, error_);
  }

  bool finish() override {
    if (error_) return false;
    UploadedFile f;
    if (!writer_->commit(options_.metadata, f, error_)) return false;
    files_.push_back(std::move(f));
    return true;
  }

  void fail_input(const std::string& reason) override {
    writer_->abort();
    error_.set(500, "error writing file: " + reason);
  }

 private:
  UploadOptions options_;
  std::unique_ptr<AtomicFileWriter> writer_;
};

class MultipartSink final : public UploadSink {
 public:
  MultipartSink(UploadOptions options, std::string boundary, MultipartParser::Limits limits)
      : options_(std::move(options)), parser_(std::move(boundary), limits) {}

  bool write(std::string_view data) override {
    if (error_) return false;
    if (done_) return true;  // the epilogue is ignored
    parser_.feed(data);
    return drain();
  }

  bool finish() override {
    if (error_) return false;
    if (done_) return true;
    parser_.finish();
    if (!drain()) return false;
    if (!done_) error_.set(500, "error reading form: multipart: NextPart: EOF");
    return !error_;
  }

  void fail_input(const std::string& reason) override {
    if (writer_) {
      writer_.reset();
      error_.set(500, "error writing file: " + reason);
    } else {
      error_.set(500, "error reading form: " + reason);
    }
  }

 private:
  bool drain() {
    for (;;) {
      switch (parser_.next()) {
        case MultipartParser::Event::need_more:
          return true;
        case MultipartParser::Event::part_begin:
          if (!begin_part()) return false;
          break;
        case MultipartParser::Event::part_data:
          if (writer_ && !writer_->write(parser_.data(), error_)) return false;
          break;
        case MultipartParser::Event::part_end:
          if (writer_) {
            UploadedFile f;
            bool ok = writer_->commit(options_.metadata, f, error_);
            writer_.reset();
            if (!ok) return false;
            files_.push_back(std::move(f));
          }
          break;
        case MultipartParser::Event::done:
          done_ = true;
          return true;
        case MultipartParser::Event::error:
          if (parser_.error_in_body() && writer_) {
            writer_.reset();
            error_.set(500, "error writing file: " + parser_.error_message());
          } else if (parser_.error_in_body()) {
            error_.set(500, "error reading form: multipart: NextPart: EOF");
          } else {
            error_.set(500, "error reading form: " + parser_.error_message());
          }
          return false;
      }
    }
  }

  bool begin_part() {
    PartDisposition d = describe_part(parser_.headers());
    if (d.form_name != "file") return true;  // other fields are skipped
    std::string raw;
    if (options_.path_param) {
      raw = *options_.path_param;
    } else if (d.filename) {
      raw = *d.filename;
    } else {
      error_.set(400, "error getting multipart custom part file name: " + d.filename_error);
      return false;
    }
    auto resolved = system::resolve_path(raw, options_.user, options_.default_workdir);
    if (!resolved.ok()) {
      error_.set(400, "error resolving path: " + resolved.error);
      return false;
    }
    for (const auto& f : files_) {
      if (f.path != resolved.path) continue;
      std::string msg = "you cannot upload multiple files to the same path '" + resolved.path +
                        "' in one upload request, only the first specified file was uploaded";
      std::vector<std::string> others;
      for (const auto& g : files_) {
        if (g.path != resolved.path) others.push_back(g.path);
      }
      if (others.size() > 1) {
        msg += ", also the following files were uploaded: ";
        for (size_t i = 0; i < others.size(); ++i) msg += (i ? ", " : "") + others[i];
      }
      error_.set(400, msg);
      return false;
    }
    writer_ = AtomicFileWriter::open(resolved.path, options_.user.uid, options_.user.gid, options_.content_length, error_);
    return writer_ != nullptr;
  }

  UploadOptions options_;
  MultipartParser parser_;
  std::unique_ptr<AtomicFileWriter> writer_;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<UploadSink> make_upload_sink(std::string_view content_type, UploadOptions options, TransferError& error,
                                             MultipartParser::Limits limits) {
  MediaType mt = parse_media_type(content_type);
  if (mt.type == "application/octet-stream") {
    if (!options.path_param) {
      error.set(400, "path query parameter is required for raw body upload");
      return nullptr;
    }
    auto resolved = system::resolve_path(*options.path_param, options.user, options.default_workdir);
    if (!resolved.ok()) {
      error.set(400, "error resolving path: " + resolved.error);
      return nullptr;
    }
    auto writer = AtomicFileWriter::open(resolved.path, options.user.uid, options.user.gid, options.content_length, error);
    if (!writer) return nullptr;
    return std::make_unique<RawSink>(std::move(options), std::move(writer));
  }
  if (mt.type.rfind("multipart/", 0) == 0) {
    if (!mt.ok() || (mt.type != "multipart/form-data" && mt.type != "multipart/mixed")) {
      error.set(500, "error parsing multipart form: request Content-Type isn't multipart/form-data");
      return nullptr;
    }
    auto boundary = mt.params.find("boundary");
    if (boundary == mt.params.end()) {
      error.set(500, "error parsing multipart form: no multipart boundary param in Content-Type");
      return nullptr;
    }
    return std::make_unique<MultipartSink>(std::move(options), boundary->second, limits);
  }
  error.set(400, "unsupported content type: " + std::string(content_type) +
                     ", expected multipart/form-data or application/octet-stream");
  return nullptr;
}

}  // namespace cove::files
