#pragma once
// The one-shot filesystem operations of envd's Filesystem service (envd.md §5), with envd's
// error kinds and texts. Paths arrive already resolved (system::resolve_path); no HTTP here.
#include <sys/types.h>

#include <string>
#include <vector>

#include "filesystem/entry_info.hpp"
#include "system/users.hpp"

namespace cove::filesystem {

// Mirrors the Connect codes envd answers with; rpc/ maps them.
enum class ErrorKind { none, not_found, already_exists, invalid_argument, failed_precondition, internal };

struct OpError {
  ErrorKind kind = ErrorKind::none;
  std::string message;
  bool ok() const { return kind == ErrorKind::none; }
};

template <typename T>
struct OpResult {
  OpError error;
  T value{};
  bool ok() const { return error.ok(); }
};

// Stat: lstat-based entry. NotFound "file not found: lstat <p>: no such file or directory".
OpResult<EntryInfo> stat_entry(const std::string& path, const system::UserDatabase& users);

// ListDir: entries up to `depth` levels below `path` (0 means 1), in WalkDir order (lexical,
// depth first), symlinks not followed. The root is resolved with EvalSymlinks; returned paths
// keep the requested base.
OpResult<std::vector<EntryInfo>> list_dir(const std::string& path, uint32_t depth, const system::UserDatabase& users);

// MakeDir: the directory and missing parents (0755, chowned to uid:gid).
OpResult<EntryInfo> make_dir(const std::string& path, uid_t uid, gid_t gid, const system::UserDatabase& users);

// Move: rename(2) after ensuring the destination's parent exists.
OpResult<EntryInfo> move_entry(const std::string& source, const std::string& destination, uid_t uid, gid_t gid,
                               const system::UserDatabase& users);

// Remove: recursive, symlinks not followed; a path that does not exist is success.
OpError remove_all(const std::string& path);

// WatchDir/CreateWatcher validation: exists, is a directory, not on a network filesystem unless
// allowed.
OpError check_watch_path(const std::string& path, bool allow_network_mounts);

// statfs magic numbers of NFS, CIFS, SMB, SMB2 and FUSE.
bool is_network_filesystem_magic(long magic);

}  // namespace cove::filesystem
