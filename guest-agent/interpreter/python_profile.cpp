#include "interpreter/python_profile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include "interpreter/resources.hpp"

namespace cove::interpreter {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "python/";

[[noreturn]] void fail(const std::string& what, const fs::path& path, int error) {
  throw std::runtime_error("python profile: " + what + " " + path.string() + ": " +
                           std::strerror(error));
}

// mkdir -p with an explicit mode (the umask must not make the profile unreadable to a kernel
// running as another user).
void make_dirs(const fs::path& dir) {
  fs::path partial;
  for (const auto& part : dir) {
    partial /= part;
    if (partial == partial.root_path()) continue;
    if (::mkdir(partial.c_str(), 0755) == 0) {
      if (::chmod(partial.c_str(), 0755) != 0) fail("cannot chmod", partial, errno);
      continue;
    }
    if (errno != EEXIST) fail("cannot create directory", partial, errno);
    struct stat st {};
    if (::stat(partial.c_str(), &st) != 0) fail("cannot stat", partial, errno);
    if (!S_ISDIR(st.st_mode)) fail("not a directory:", partial, ENOTDIR);
  }
}

void write_file(const fs::path& path, std::string_view content) {
  const fs::path temp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", temp, errno);
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      fail("cannot write", temp, error);
    }
    written += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail("cannot finish", temp, error);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail("cannot rename into place", path, error);
  }
}

// Python files (scripts IPython would run, modules it would import) that are no longer embedded.
void remove_stale_python(const fs::path& dir, const std::set<fs::path>& wanted) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& path = it->path();
    if (path.extension() != ".py" || !it->is_regular_file() || wanted.count(path)) continue;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) fail("cannot remove stale", path, errno);
  }
}

}  // namespace

std::string write_python_profile(const std::string& runtime_dir) {
  if (runtime_dir.empty()) throw std::runtime_error("python profile: empty runtime dir");
  const fs::path root = fs::path(runtime_dir) / "ipython";
  std::map<fs::path, std::string_view> files;
  for (const auto& resource : resources()) {
    if (resource.path.substr(0, kPrefix.size()) != kPrefix) continue;
    const fs::path relative(resource.path.substr(kPrefix.size()));
    for (const auto& part : relative) {
      if (relative.is_absolute() || part == ".." || part == ".") {
        throw std::runtime_error("python profile: bad resource path " + std::string(resource.path));
      }
    }
    files.emplace(root / relative, resource.content);
  }
  if (files.empty()) throw std::runtime_error("python profile: no python/ resources embedded");

  make_dirs(root);
  std::set<fs::path> dirs;
  std::set<fs::path> wanted;
  for (const auto& [path, content] : files) {
    if (dirs.insert(path.parent_path()).second) make_dirs(path.parent_path());
    write_file(path, content);
    wanted.insert(path);
  }
  for (const auto& dir : dirs) remove_stale_python(dir, wanted);
  return root.string();
}

}  // namespace cove::interpreter
