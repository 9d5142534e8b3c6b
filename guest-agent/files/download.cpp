#include "files/download.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "files/content_type.hpp"
#include "files/http_date.hpp"
#include "files/media_type.hpp"
#include "system/go_errors.hpp"
#include "files/range.hpp"
#include "files/upload.hpp"

namespace cove::files {
namespace {

constexpr std::string_view kNotAcceptable =
    "error parsing Accept-Encoding: no acceptable encoding found, supported: [gzip]";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Scans an entity-tag list (If-Match / If-None-Match) the way Go does with no ETag of our own:
// true when "*" comes before anything malformed. Tags never match (the file has no ETag).
bool etag_list_has_star(std::string_view list) {
  for (;;) {
    list = trim(list);
    if (list.empty()) return false;
    if (list[0] == ',') {
      list.remove_prefix(1);
      continue;
    }
    if (list[0] == '*') return true;
    // One entity tag: [W/]"..." (anything else is malformed and ends the scan).
    if (list.substr(0, 2) == "W/") list.remove_prefix(2);
    if (list.empty() || list[0] != '"') return false;
    size_t close = list.find('"', 1);
    if (close == std::string_view::npos) return false;
    list.remove_prefix(close + 1);
  }
}

bool looks_like_etag(std::string_view s) {
  s = trim(s);
  if (s.substr(0, 2) == "W/") s.remove_prefix(2);
  return s.size() >= 2 && s[0] == '"' && s.find('"', 1) != std::string_view::npos;
}

DownloadPlan json_error(DownloadPlan plan, unsigned status, std::string message) {
  plan.status = status;
  plan.json_error = true;
  plan.body = std::move(message);
  plan.stream = false;
  plan.file.reset();
  return plan;
}

DownloadPlan text_error(DownloadPlan plan, unsigned status, std::string message) {
  plan.status = status;
  plan.content_type = "text/plain; charset=utf-8";
  plan.headers.emplace_back("X-Content-Type-Options", "nosniff");
  plan.body = std::move(message) + "\n";
  plan.stream = false;
  plan.file.reset();
  return plan;
}

}  // namespace

DownloadPlan plan_download(const DownloadRequest& req) {
  DownloadPlan plan;
  const std::string& path = req.resolved_path;
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT) return json_error(std::move(plan), 404, "path '" + path + "' does not exist");
    return json_error(std::move(plan), 500,
                      "error checking if path exists '" + path + "': " + system::path_error("stat", path, e));
  }
  if (S_ISDIR(st.st_mode)) return json_error(std::move(plan), 400, "path '" + path + "' is a directory");

  EncodingChoice enc = negotiate_encoding(req.accept_encoding);
  if (!enc.acceptable) return json_error(std::move(plan), 406, std::string(kNotAcceptable));
  plan.headers.emplace_back("Vary", "Accept-Encoding");
  // Ranges and conditionals are answered from the identity representation.
  if (!req.range.empty() || !req.if_modified_since.empty() || !req.if_none_match.empty() || !req.if_range.empty()) {
    if (!enc.identity_acceptable) return json_error(std::move(plan), 406, std::string(kNotAcceptable));
    enc.encoding = Encoding::identity;
  }

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    return json_error(std::move(plan), 500, "error opening file '" + path + "': " + system::path_error("open", path, e));
  }
  plan.file = Fd(fd);
  if (fstat(fd, &st) != 0) {
    int e = errno;
    return json_error(std::move(plan), 500, "error opening file '" + path + "': " + system::path_error("stat", path, e));
  }
  std::string disposition = format_media_type("inline", {{"filename", path_base(path)}});
  if (!disposition.empty()) plan.headers.emplace_back("Content-Disposition", disposition);

  if (enc.encoding == Encoding::gzip) {
    plan.headers.emplace_back("Content-Encoding", "gzip");
    plan.content_type = content_type_by_extension(req.raw_path);
    if (plan.content_type.empty()) plan.content_type = "application/octet-stream";
    plan.stream = true;
    plan.gzip = true;
    return plan;
  }

  // Identity, as http.ServeContent: validators, preconditions, type, ranges.
  const std::uint64_t size = S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
  const std::time_t mtime = st.st_mtim.tv_sec;
  const bool zero_time = st.st_mtim.tv_sec == 0 && st.st_mtim.tv_nsec == 0;
  if (!zero_time) plan.headers.emplace_back("Last-Modified", format_http_date(mtime));

  if (!req.if_match.empty()) {
    if (!etag_list_has_star(req.if_match)) {
      plan.status = 412;
      plan.file.reset();
      return plan;
    }
  } else if (!req.if_unmodified_since.empty() && !zero_time) {
    if (auto t = parse_http_date(req.if_unmodified_since); t && mtime > *t) {
      plan.status = 412;
      plan.file.reset();
      return plan;
    }
  }
  bool not_modified = false;
  if (!req.if_none_match.empty()) {
    not_modified = etag_list_has_star(req.if_none_match);
  } else if (!req.if_modified_since.empty() && !zero_time) {
    if (auto t = parse_http_date(req.if_modified_since); t && mtime <= *t) not_modified = true;
  }
  if (not_modified) {
    plan.status = 304;
    plan.file.reset();
    return plan;
  }

  std::string range = req.range;
  if (!range.empty() && !req.if_range.empty()) {
    bool keep = false;
    if (!looks_like_etag(req.if_range) && !zero_time) {
      if (auto t = parse_http_date(req.if_range); t && *t == mtime) keep = true;
    }
    if (!keep) range.clear();
  }

  plan.content_type = content_type_by_extension(req.raw_path);
  if (plan.content_type.empty()) {
    std::string head(kSniffLength, '\0');
    ssize_t n = pread(fd, head.data(), head.size(), 0);
    head.resize(n > 0 ? static_cast<size_t>(n) : 0);
    plan.content_type = sniff_content_type(head);
  }

  plan.offset = 0;
  plan.length = size;
  RangeSpec spec = parse_range(range, size);
  switch (spec.kind) {
    case RangeSpec::Kind::invalid:
      return text_error(std::move(plan), 416, "invalid range");
    case RangeSpec::Kind::no_overlap:
      plan.headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
      return text_error(std::move(plan), 416, "invalid range: failed to overlap");
    case RangeSpec::Kind::ranges:
      if (spec.ranges.size() == 1) {
        plan.status = 206;
        plan.offset = spec.ranges[0].start;
        plan.length = spec.ranges[0].length;
        plan.headers.emplace_back("Content-Range", spec.ranges[0].content_range(size));
      }
      break;
    case RangeSpec::Kind::none:
      break;
  }
  plan.headers.emplace_back("Accept-Ranges", "bytes");
  plan.stream = true;
  return plan;
}

DownloadStream::DownloadStream(DownloadPlan& plan) : file_(std::move(plan.file)), gzip_(plan.gzip) {
  pos_ = plan.offset;
  end_ = plan.offset + plan.length;
  if (gzip_) encoder_ = std::make_unique<GzipEncoder>();
  if (!file_) failed_ = done_ = true;
}

bool DownloadStream::next(std::string& out) {
  out.clear();
  if (done_) return false;
  if (!gzip_) {
    if (pos_ >= end_) {
      done_ = true;
      return false;
    }
    size_t want = static_cast<size_t>(std::min<std::uint64_t>(kReadChunk, end_ - pos_));
    buf_.resize(want);
    ssize_t n;
    do {
      n = pread(file_.get(), buf_.data(), want, static_cast<off_t>(pos_));
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
      failed_ = done_ = true;
      short_ = n == 0;
      return false;
    }
    pos_ += static_cast<std::uint64_t>(n);
    out.assign(buf_.data(), static_cast<size_t>(n));
    if (pos_ >= end_) done_ = true;
    return !done_;
  }
  // gzip: the file is read sequentially to its end, whatever its size was at the start.
  buf_.resize(kReadChunk);
  ssize_t n;
  do {
    n = ::read(file_.get(), buf_.data(), buf_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) n = 0;  // a FIFO with nothing in it
  if (n < 0) {
    failed_ = done_ = true;
    return false;
  }
  if (n == 0) {
    encoder_->finish(out);
    done_ = true;
    return false;
  }
  pos_ += static_cast<std::uint64_t>(n);
  encoder_->write(std::string_view(buf_.data(), static_cast<size_t>(n)), out);
  return true;
}

}  // namespace cove::files
