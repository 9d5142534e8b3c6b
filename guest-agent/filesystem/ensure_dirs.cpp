#include "filesystem/ensure_dirs.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cove::filesystem {

bool ensure_dirs(const std::string& dir, uid_t uid, gid_t gid, std::string& error) {
  if (dir.empty()) return true;
  // Walk from the root so each created level can be chowned right away.
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    std::string prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    struct stat st{};
    if (stat(prefix.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        error = "path is a file: " + prefix;
        return false;
      }
      continue;
    }
    if (errno != ENOENT) {
      error = "stat " + prefix + ": " + std::strerror(errno);
      return false;
    }
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "mkdir " + prefix + ": " + std::strerror(errno);
      return false;
    }
    if (chown(prefix.c_str(), uid, gid) != 0) {
      error = "chown " + prefix + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace cove::filesystem
