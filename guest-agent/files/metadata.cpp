#include "files/metadata.hpp"

#include <sys/xattr.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>

#include "system/go_errors.hpp"

namespace cove::files {
namespace {

constexpr std::string_view kHeaderPrefix = "x-metadata-";

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string printable_error(std::string_view label, std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c > 0x7e) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      return "metadata " + std::string(label) + " contains non-printable-ASCII byte " + hex + " at offset " +
             std::to_string(i);
    }
  }
  return {};
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    unsigned char c1 = n > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
    if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90)) {
      return false;
    }
    i += n;
  }
  return true;
}

bool unsupported(int e) { return e == ENOTSUP || e == EOPNOTSUPP; }

// listxattr/getxattr with a size probe, retried if the set grows in between.
bool list_names(const std::function<ssize_t(char*, size_t)>& list, std::vector<std::string>& names, int& err) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    ssize_t size = list(nullptr, 0);
    if (size < 0) {
      err = errno;
      return false;
    }
    std::string buf(static_cast<size_t>(size), '\0');
    ssize_t got = size == 0 ? 0 : list(buf.data(), buf.size());
    if (got < 0) {
      if (errno == ERANGE) continue;
      err = errno;
      return false;
    }
    buf.resize(static_cast<size_t>(got));
    names.clear();
    for (size_t i = 0; i < buf.size();) {
      size_t end = buf.find('\0', i);
      if (end == std::string::npos) end = buf.size();
      if (end > i) names.emplace_back(buf.substr(i, end - i));
      i = end + 1;
    }
    return true;
  }
  err = ERANGE;
  return false;
}

std::optional<std::string> get_value(const std::function<ssize_t(const char*, char*, size_t)>& get, const std::string& name) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    ssize_t size = get(name.c_str(), nullptr, 0);
    if (size < 0) return std::nullopt;
    std::string value(static_cast<size_t>(size), '\0');
    ssize_t got = size == 0 ? 0 : get(name.c_str(), value.data(), value.size());
    if (got < 0) {
      if (errno == ERANGE) continue;
      return std::nullopt;
    }
    value.resize(static_cast<size_t>(got));
    return value;
  }
  return std::nullopt;
}

Metadata read_with(const std::function<ssize_t(char*, size_t)>& list,
                   const std::function<ssize_t(const char*, char*, size_t)>& get) {
  Metadata out;
  std::vector<std::string> names;
  int err = 0;
  if (!list_names(list, names, err)) return out;
  for (const auto& name : names) {
    if (name.compare(0, kMetadataXattrPrefix.size(), kMetadataXattrPrefix) != 0) continue;
    auto value = get_value(get, name);
    if (!value) continue;
    std::string key = name.substr(kMetadataXattrPrefix.size());
    if (!valid_utf8(key) || !valid_utf8(*value)) continue;
    out[key] = std::move(*value);
  }
  return out;
}

}  // namespace

Metadata metadata_from_headers(const std::vector<std::pair<std::string_view, std::string_view>>& headers) {
  Metadata out;
  for (const auto& [name, value] : headers) {
    if (name.size() < kHeaderPrefix.size() || lower(name.substr(0, kHeaderPrefix.size())) != kHeaderPrefix) continue;
    std::string key = lower(name.substr(kHeaderPrefix.size()));
    if (key.empty()) continue;
    out.emplace(std::move(key), std::string(value));  // emplace keeps the first value
  }
  return out;
}

std::string validate_metadata(const Metadata& metadata) {
  size_t total = 0;
  for (const auto& [key, value] : metadata) {
    if (key.empty()) return "metadata key must not be empty";
    if (key.size() > kMaxMetadataKeyLength) {
      return "metadata key " + system::go_quote(key) + " exceeds " + std::to_string(kMaxMetadataKeyLength) + " bytes";
    }
    if (auto e = printable_error("key", key); !e.empty()) return e;
    if (auto e = printable_error("value for key " + system::go_quote(key), value); !e.empty()) return e;
    total += kMetadataXattrPrefix.size() + key.size() + value.size();
  }
  if (total > kMaxMetadataTotalLength) {
    return "total metadata size " + std::to_string(total) + " exceeds " + std::to_string(kMaxMetadataTotalLength) +
           " bytes";
  }
  return {};
}

int replace_metadata(int fd, const Metadata& metadata, std::string& error) {
  std::vector<std::string> names;
  int err = 0;
  auto list = [fd](char* buf, size_t size) { return flistxattr(fd, buf, size); };
  if (!list_names(list, names, err)) {
    if (unsupported(err)) return 0;
    error = std::string("flistxattr: ") + std::strerror(err);
    return err;
  }
  for (const auto& name : names) {
    if (name.compare(0, kMetadataXattrPrefix.size(), kMetadataXattrPrefix) != 0) continue;
    if (metadata.count(name.substr(kMetadataXattrPrefix.size()))) continue;
    if (fremovexattr(fd, name.c_str()) != 0 && errno != ENODATA) {
      err = errno;
      if (unsupported(err)) return 0;
      error = "fremovexattr " + name + ": " + std::strerror(err);
      return err;
    }
  }
  for (const auto& [key, value] : metadata) {
    std::string name = std::string(kMetadataXattrPrefix) + key;
    if (fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) != 0) {
      err = errno;
      if (unsupported(err)) return 0;
      error = "fsetxattr " + name + ": " + std::strerror(err);
      return err;
    }
  }
  return 0;
}

Metadata read_metadata(int fd) {
  return read_with([fd](char* buf, size_t size) { return flistxattr(fd, buf, size); },
                   [fd](const char* name, char* buf, size_t size) { return fgetxattr(fd, name, buf, size); });
}

Metadata read_metadata(const std::string& path) {
  return read_with([&path](char* buf, size_t size) { return listxattr(path.c_str(), buf, size); },
                   [&path](const char* name, char* buf, size_t size) { return getxattr(path.c_str(), name, buf, size); });
}

}  // namespace cove::files
