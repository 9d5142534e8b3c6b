#pragma once
// GET /files without HTTP (envd.md §3 "GET /files"): from the resolved path and the request's
// negotiation headers to either a complete answer (errors, 304, 412, 416) or a body streamed
// from disk in bounded chunks — identity with a Content-Length (whole file or one range), or
// gzip without one.
//
// Multiple ranges: Go's http.ServeContent would answer multipart/byteranges; Cove ignores a
// Range header naming more than one satisfiable range and sends the whole file with 200
// (RFC 9110 §14.2 lets a server ignore Range).
#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "files/fd.hpp"
#include "files/gzip.hpp"

namespace cove::files {

struct DownloadRequest {
  std::string raw_path;       // the `path` query value as sent (Content-Type by extension)
  std::string resolved_path;  // after ExpandAndResolve
  std::string accept_encoding, range, if_match, if_unmodified_since, if_none_match, if_modified_since, if_range;
};

struct DownloadPlan {
  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // set on the response as given
  std::string content_type;                                  // "" for none

  // Complete answers (stream == false).
  bool json_error = false;  // body is the message of envd's JSON error
  std::string body;

  // Streamed answers.
  bool stream = false;
  bool gzip = false;           // chunked, no Content-Length, file read to its end
  std::uint64_t offset = 0;    // identity: first byte
  std::uint64_t length = 0;    // identity: exact byte count (Content-Length)
  Fd file;
};

DownloadPlan plan_download(const DownloadRequest& request);

// Produces the body of a streamed plan piece by piece (each read at most kReadChunk bytes).
class DownloadStream {
 public:
  static constexpr size_t kReadChunk = 256 * 1024;

  explicit DownloadStream(DownloadPlan& plan);  // takes the plan's file

  // Replaces `out` with the next piece; false once the body is complete (out then holds the
  // last bytes, possibly none) or on failure (failed()).
  bool next(std::string& out);
  bool failed() const { return failed_; }
  // Identity bodies promise a length: a file that shrank underneath cannot keep the promise.
  bool short_read() const { return short_; }

 private:
  Fd file_;
  bool gzip_ = false;
  std::uint64_t pos_ = 0, end_ = 0;
  std::unique_ptr<GzipEncoder> encoder_;
  std::string buf_;
  bool done_ = false, failed_ = false, short_ = false;
};

}  // namespace cove::files
