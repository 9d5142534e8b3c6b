#include "system/paths.hpp"

#include <vector>

namespace cove::system {

std::string clean_path(std::string_view path) {
  if (path.empty()) return ".";
  const bool rooted = path.front() == '/';
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    i = j + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (!rooted) {
        parts.push_back(part);
      }
      continue;
    }
    parts.push_back(part);
  }
  std::string out = rooted ? "/" : "";
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k) out += '/';
    out += parts[k];
  }
  if (out.empty()) return ".";
  return out;
}

ResolvedPath resolve_path(std::string_view path, const User& user,
                          const std::optional<std::string>& default_workdir) {
  std::string p(path);
  if (p.empty() && default_workdir) p = *default_workdir;
  if (!p.empty() && p[0] == '~') {
    if (p.size() > 1 && p[1] != '/' && p[1] != '\\') {
      return {{}, "failed to expand path '" + p + "' for user '" + user.name +
                      "': cannot expand user-specific home dir"};
    }
    p = clean_path(user.home + "/" + p.substr(1));
  }
  if (!p.empty() && p[0] == '/') return {p, {}};
  return {clean_path(user.home + "/" + p), {}};
}

}  // namespace cove::system
