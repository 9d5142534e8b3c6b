#pragma once
// envd's EnsureDirs: create each missing ancestor of a path (mkdir 0755) and hand the new
// directories (only those) to the user.
#include <sys/types.h>

#include <string>

namespace cove::filesystem {

// Ensures `dir` and its ancestors exist as directories. On failure returns false with `error`
// set: "path is a file: <p>" when a component is not a directory, else the system error.
bool ensure_dirs(const std::string& dir, uid_t uid, gid_t gid, std::string& error);

}  // namespace cove::filesystem
