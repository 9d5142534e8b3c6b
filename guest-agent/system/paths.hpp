#pragma once
// Path resolution exactly as envd does it (envd.md §2): an empty path becomes the default workdir,
// `~` expands to the target user's HOME, relative paths join HOME (never the workdir).
#include <optional>
#include <string>
#include <string_view>

#include "system/users.hpp"
#include "text/clean_path.hpp"

namespace cove::system {

using text::clean_path;  // Go's filepath.Clean rules

struct ResolvedPath {
  std::string path;   // set on success
  std::string error;  // set on failure
  bool ok() const { return error.empty(); }
};

ResolvedPath resolve_path(std::string_view path, const User& user,
                          const std::optional<std::string>& default_workdir);

}  // namespace cove::system
