#include "system/paths.hpp"

#include <vector>

namespace cove::system {

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
