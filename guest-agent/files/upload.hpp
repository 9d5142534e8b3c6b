#pragma once
// POST /files without HTTP: the decoded request body goes in piece by piece (write/finish) and
// comes out as files on disk (envd.md §3 "POST /files"). Bodies are never buffered: multipart
// parts stream through the incremental parser straight into the file.
//
// Better than envd: each file is written to a temporary sibling (".<name>.cove-upload.<random>")
// and renamed over the target only when complete, so a failed or cut-off upload never leaves a
// truncated file where the old one was. The temporary file is removed on every failure path.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "files/fd.hpp"
#include "files/metadata.hpp"
#include "files/multipart.hpp"
#include "files/transfer_error.hpp"
#include "system/users.hpp"

namespace cove::files {

struct UploadedFile {
  std::string path;   // the resolved target path
  std::string name;   // its last element
  Metadata metadata;  // as read back from the file
};

// [{"metadata"?:{..},"name":..,"path":..,"type":"file"}] (keys sorted, as Go marshals them).
std::string upload_response_json(const std::vector<UploadedFile>& files);

// Go's filepath.Dir / filepath.Base.
std::string path_dir(std::string_view path);
std::string path_base(std::string_view path);

// One file written aside and published only when complete, so a failed or cut-off upload never
// leaves a truncated file where the old one was.
//
// Where the bytes go while streaming: an unnamed O_TMPFILE inode in the staging directory — the
// root of the mount holding the target (same filesystem, so publishing is a link or a rename),
// chosen so that watchers of the target's directory see nothing of the upload in progress (an
// O_TMPFILE inode inside the watched directory would still report IN_MODIFY as "#<inode>").
// Without O_TMPFILE a named hidden file ".<name>.cove-upload.<random>" in the staging directory
// is used; if the mount root cannot be written, the target's own directory stages.
//
// Publishing: a new target is linked in place (atomic, no other name ever appears); an existing
// one is replaced with rename(2) from the staging directory. Then the target is truncated to its
// own size through a fresh descriptor, which reports IN_MODIFY on the target's name, so
// watchers see create+write (new file) or write (existing file) as with envd's in-place write.
// Across an EXDEV boundary (XFS project quotas) the content is copied into the target instead.
//
// Existing files keep their mode; the file is owned by uid:gid; new files get 0666 & ~umask.
// Symlinks at the target are followed (the file they point to is replaced, as envd writes
// through them). An existing non-regular file (device, FIFO) is written in place.
class AtomicFileWriter {
 public:
  // envd's processFile preamble: EnsureDirs(parent) chowned to the user (500), a directory at
  // the target (400), then the file itself (507 when out of inodes, 500 otherwise).
  // `content_length` is the request's, for the ENOSPC message; -1 when unknown.
  static std::unique_ptr<AtomicFileWriter> open(const std::string& target, uid_t uid, gid_t gid,
                                                std::int64_t content_length, TransferError& error);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  bool write(std::string_view data, TransferError& error);
  // Replaces the metadata xattrs, then publishes the file at the target.
  bool commit(const Metadata& metadata, UploadedFile& out, TransferError& error);
  // Drops the staged data (also done by the destructor when not committed).
  void abort();

  enum class Staging { unnamed, named, in_place };
  Staging staging() const { return staging_; }
  const std::string& staging_dir() const { return staging_dir_; }

 private:
  AtomicFileWriter() = default;
  bool publish(TransferError& error);
  bool copy_into_target(TransferError& error);
  void write_error(int err, TransferError& error);

  std::string target_;       // as requested (messages, response)
  std::string final_;        // after following symlinks
  std::string staging_dir_;  // where the data is staged
  std::string temp_;         // the named staging file (Staging::named)
  Staging staging_ = Staging::unnamed;
  Fd fd_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::uint64_t size_ = 0;
  std::int64_t content_length_ = -1;
  bool done_ = false;
};

// The root of the mount that holds `dir` (canonical path), or `dir` itself when it cannot be
// determined.
std::string mount_root_of(const std::string& dir);

struct UploadOptions {
  system::User user;
  std::optional<std::string> default_workdir;
  std::optional<std::string> path_param;  // the `path` query value, if present
  Metadata metadata;                      // validated X-Metadata-* set, applied to every file
  std::int64_t content_length = -1;       // request Content-Length, -1 when chunked
};

// Receives the decoded body. A sink that failed stays failed; its error() is the answer.
class UploadSink {
 public:
  virtual ~UploadSink() = default;
  virtual bool write(std::string_view data) = 0;
  // The body ended.
  virtual bool finish() = 0;
  // Reading the body failed (e.g. corrupt gzip): the failure is reported the way envd reports
  // a failing reader at this point of the body.
  virtual void fail_input(const std::string& reason) = 0;

  const TransferError& error() const { return error_; }
  const std::vector<UploadedFile>& files() const { return files_; }

 protected:
  TransferError error_;
  std::vector<UploadedFile> files_;
};

// Dispatch on the request's Content-Type: application/octet-stream (needs the path parameter;
// the target is prepared before any body is read, as envd), multipart/* (form-data or mixed with
// a boundary), else 400. Returns null with `error` set when the request is refused up front.
std::unique_ptr<UploadSink> make_upload_sink(std::string_view content_type, UploadOptions options,
                                             TransferError& error,
                                             MultipartParser::Limits limits = MultipartParser::Limits{});

}  // namespace cove::files
