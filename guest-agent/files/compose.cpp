#include "files/compose.hpp"

#include "text/uuid.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <sstream>

#include "system/go_errors.hpp"
#include "files/upload.hpp"
#include "filesystem/ensure_dirs.hpp"
#include "system/paths.hpp"

namespace cove::files {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const char* json_kind(const nlohmann::json& j) {
  if (j.is_string()) return "string";
  if (j.is_number()) return "number";
  if (j.is_boolean()) return "bool";
  if (j.is_array()) return "array";
  if (j.is_object()) return "object";
  return "null";
}

std::string type_error(const nlohmann::json& j, std::string_view field, std::string_view go_type) {
  return std::string("json: cannot unmarshal ") + json_kind(j) + " into Go struct field Compose." + std::string(field) +
         " of type " + std::string(go_type);
}

bool copy_unsupported(int e) { return e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == EBADF; }

}  // namespace

bool parse_compose_request(std::string_view body, ComposeRequest& out, std::string& error) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    error = "invalid request body: EOF";
    return false;
  }
  nlohmann::json j;
  try {
    std::istringstream in{std::string(body)};
    in >> j;  // one value; anything after it is not read (json.Decoder.Decode)
  } catch (const nlohmann::json::parse_error& e) {
    error = e.byte >= body.size() ? "invalid request body: unexpected EOF"
                                  : "invalid request body: invalid character in JSON input";
    return false;
  }
  if (j.is_null()) return true;
  if (!j.is_object()) {
    error = std::string("invalid request body: json: cannot unmarshal ") + json_kind(j) + " into Go value of type api.Compose";
    return false;
  }
  for (const auto& [key, value] : j.items()) {
    std::string k = lower(key);
    if (k == "source_paths") {
      if (value.is_null()) continue;
      if (!value.is_array()) {
        error = "invalid request body: " + type_error(value, "source_paths", "[]string");
        return false;
      }
      out.source_paths.clear();
      for (const auto& item : value) {
        if (item.is_null()) {
          out.source_paths.emplace_back();
        } else if (item.is_string()) {
          out.source_paths.push_back(item.get<std::string>());
        } else {
          error = "invalid request body: " + type_error(item, "source_paths", "string");
          return false;
        }
      }
    } else if (k == "destination") {
      if (value.is_null()) continue;
      if (!value.is_string()) {
        error = "invalid request body: " + type_error(value, "destination", "string");
        return false;
      }
      out.destination = value.get<std::string>();
    } else if (k == "username") {
      if (value.is_null()) continue;
      if (!value.is_string()) {
        error = "invalid request body: " + type_error(value, "username", "string");
        return false;
      }
      out.username = value.get<std::string>();
    }
  }
  return true;
}

TransferError check_compose_request(const ComposeRequest& request) {
  TransferError e;
  if (request.source_paths.empty()) e.set(400, "source_paths must not be empty");
  else if (request.destination.empty()) e.set(400, "destination is required");
  return e;
}

std::unique_ptr<ComposeJob> ComposeJob::start(const ComposeRequest& request, const system::User& user,
                                              const std::optional<std::string>& default_workdir, TransferError& error) {
  auto dest = system::resolve_path(request.destination, user, default_workdir);
  if (!dest.ok()) {
    error.set(400, "error resolving destination path: " + dest.error);
    return nullptr;
  }
  std::unique_ptr<ComposeJob> job(new ComposeJob());
  job->destination_ = dest.path;
  for (const auto& src : request.source_paths) {
    auto resolved = system::resolve_path(src, user, default_workdir);
    if (!resolved.ok()) {
      error.set(400, "error resolving source path " + system::go_quote(src) + ": " + resolved.error);
      return nullptr;
    }
    if (resolved.path == dest.path) {
      error.set(400, "source path " + system::go_quote(src) + " cannot be the same as destination");
      return nullptr;
    }
    struct stat st{};
    if (stat(resolved.path.c_str(), &st) != 0) {
      error.set(404, "source file not found: " + src);
      return nullptr;
    }
    if (!S_ISREG(st.st_mode)) {
      error.set(400, "source path is not a regular file: " + src);
      return nullptr;
    }
    job->sources_.push_back(resolved.path);
  }
  std::string ensure_error;
  if (!filesystem::ensure_dirs(path_dir(dest.path), user.uid, user.gid, ensure_error)) {
    error.set(500, "error ensuring directories: " + ensure_error);
    return nullptr;
  }
  std::string temp = dest.path + ".e2b-compose." + text::random_uuid4() + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    int e = errno;
    if (e == ENOSPC) {
      error.set(507, "not enough disk space available");
    } else {
      error.set(500, "error creating destination file: " + system::path_error("open", temp, e));
    }
    return nullptr;
  }
  job->out_ = Fd(fd);
  job->temp_ = temp;
  if (fchown(fd, user.uid, user.gid) != 0) {
    error.set(500, "error changing file ownership: " + system::path_error("chown", temp, errno));
    return nullptr;  // the destructor removes the temp file
  }
  return job;
}

ComposeJob::~ComposeJob() { cleanup(); }

void ComposeJob::cleanup() {
  if (finished_) return;
  finished_ = true;
  in_.reset();
  out_.reset();
  if (!temp_.empty()) unlink(temp_.c_str());
}

bool ComposeJob::copy_fallback(std::uint64_t budget, std::uint64_t& copied, TransferError& error) {
  char buf[64 * 1024];
  while (copied < budget) {
    ssize_t n = ::read(in_.get(), buf, static_cast<size_t>(std::min<std::uint64_t>(sizeof buf, budget - copied)));
    if (n < 0) {
      if (errno == EINTR) continue;
      error.set(500, "error composing source " + sources_[index_] + ": " + system::path_error("read", sources_[index_], errno));
      return false;
    }
    if (n == 0) {
      in_.reset();
      ++index_;
      return true;
    }
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(out_.get(), buf + off, static_cast<size_t>(n - off));
      if (w < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        if (e == ENOSPC) error.set(507, "not enough disk space available");
        else error.set(500, "error composing source " + sources_[index_] + ": " + system::path_error("write", temp_, e));
        return false;
      }
      off += w;
    }
    copied += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool ComposeJob::step(std::uint64_t budget, bool& done, TransferError& error) {
  done = false;
  std::uint64_t copied = 0;
  while (copied < budget) {
    if (index_ >= sources_.size()) {
      done = true;
      return true;
    }
    if (!in_) {
      int fd = ::open(sources_[index_].c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        error.set(500, "error opening source file " + sources_[index_] + ": " + system::path_error("open", sources_[index_], errno));
        cleanup();
        return false;
      }
      in_ = Fd(fd);
    }
    ssize_t n = copy_file_range(in_.get(), nullptr, out_.get(), nullptr,
                                static_cast<size_t>(std::min<std::uint64_t>(budget - copied, 1u << 30)), 0);
    if (n < 0) {
      int e = errno;
      if (e == EINTR) continue;
      if (copy_unsupported(e)) {
        if (!copy_fallback(budget, copied, error)) {
          cleanup();
          return false;
        }
        continue;
      }
      if (e == ENOSPC) error.set(507, "not enough disk space available");
      else error.set(500, "error composing source " + sources_[index_] + ": " + system::errno_text(e));
      cleanup();
      return false;
    }
    if (n == 0) {
      in_.reset();
      ++index_;
      continue;
    }
    copied += static_cast<std::uint64_t>(n);
  }
  done = index_ >= sources_.size();
  return true;
}

bool ComposeJob::finish(std::string& body, TransferError& error) {
  if (out_.close() != 0) {
    int e = errno;
    error.set(500, "error closing destination file: " + system::path_error("close", temp_, e));
    cleanup();
    return false;
  }
  if (rename(temp_.c_str(), destination_.c_str()) != 0) {
    int e = errno;
    error.set(500, "error finalizing compose: rename " + temp_ + " " + destination_ + ": " + system::errno_text(e));
    cleanup();
    return false;
  }
  finished_ = true;
  for (const auto& src : sources_) unlink(src.c_str());
  nlohmann::json j = nlohmann::json::object();
  j["name"] = path_base(destination_);
  j["path"] = destination_;
  j["type"] = "file";
  body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return true;
}

}  // namespace cove::files
