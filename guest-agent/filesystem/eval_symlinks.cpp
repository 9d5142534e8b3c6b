#include "filesystem/eval_symlinks.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "system/go_errors.hpp"
#include "system/paths.hpp"

namespace cove::filesystem {
namespace {

constexpr int kMaxLinks = 255;

EvalResult fail(EvalResult::Error kind, std::string message) {
  EvalResult r;
  r.error = kind;
  r.message = std::move(message);
  return r;
}

std::optional<std::string> read_link(const std::string& path, int& err) {
  std::string buf(256, '\0');
  for (;;) {
    ssize_t n = readlink(path.c_str(), buf.data(), buf.size());
    if (n < 0) {
      err = errno;
      return std::nullopt;
    }
    if (static_cast<size_t>(n) < buf.size()) {
      buf.resize(static_cast<size_t>(n));
      return buf;
    }
    buf.resize(buf.size() * 2);
  }
}

}  // namespace

EvalResult eval_symlinks(std::string_view input) {
  // `rest` is the path still to walk (it grows when a link is spliced in), `dest` what has been
  // resolved so far, `root` the leading "/" when the current walk is absolute.
  std::string rest(input);
  std::string root = (!rest.empty() && rest[0] == '/') ? "/" : "";
  std::string dest = root;
  int links = 0;

  // Index of the last '/' in dest that lies after the root, if any.
  auto last_separator = [&]() -> std::optional<size_t> {
    for (size_t r = dest.size(); r-- > root.size();) {
      if (dest[r] == '/') return r;
    }
    return std::nullopt;
  };

  size_t pos = root.size();
  while (pos < rest.size()) {
    while (pos < rest.size() && rest[pos] == '/') ++pos;
    size_t end = pos;
    while (end < rest.size() && rest[end] != '/') ++end;
    if (end == pos) break;
    const std::string comp = rest.substr(pos, end - pos);
    pos = end;

    if (comp == ".") continue;
    if (comp == "..") {
      // Drop the last resolved component; a leading ".." that cannot be dropped is kept and
      // left to the final clean.
      auto r = last_separator();
      if (!r || dest.compare(*r + 1, std::string::npos, "..") == 0) {
        if (dest.size() > root.size()) dest += '/';
        dest += "..";
      } else {
        dest.resize(*r);
      }
      continue;
    }

    if (!dest.empty() && dest.back() != '/') dest += '/';
    dest += comp;

    struct stat st{};
    if (lstat(dest.c_str(), &st) != 0) {
      const int err = errno;
      return fail(err == ENOENT ? EvalResult::Error::not_exist : EvalResult::Error::other,
                  system::path_error("lstat", dest, err));
    }
    if (!S_ISLNK(st.st_mode)) {
      if (!S_ISDIR(st.st_mode) && end < rest.size()) {
        return fail(EvalResult::Error::other, system::errno_text(ENOTDIR));
      }
      continue;
    }

    if (++links > kMaxLinks) return fail(EvalResult::Error::too_many_links, "EvalSymlinks: too many links");
    int err = 0;
    auto link = read_link(dest, err);
    if (!link) {
      return fail(err == ENOENT ? EvalResult::Error::not_exist : EvalResult::Error::other,
                  system::path_error("readlink", dest, err));
    }
    rest = *link + rest.substr(end);
    if (!link->empty() && (*link)[0] == '/') {
      root = "/";
      dest = root;
      pos = 1;
    } else {
      // Relative target: it replaces the link's own component.
      auto r = last_separator();
      dest = r ? dest.substr(0, *r) : root;
      pos = 0;
    }
  }
  EvalResult ok;
  ok.path = system::clean_path(dest);
  return ok;
}

}  // namespace cove::filesystem
