#pragma once
// envd's EntryInfo, built from lstat (envd.md §5): the type and mode of a symlink are its
// target's, symlink_target is fully resolved, permissions is Go's FileMode.String(), owner and
// group come from /etc/passwd and /etc/group, metadata from the user.e2b.* xattrs.
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "system/users.hpp"

namespace cove::filesystem {

// Values match filesystem.FileType.
enum class EntryType { unspecified = 0, file = 1, directory = 2, symlink = 3 };

struct Timespec {
  int64_t seconds = 0;
  int32_t nanos = 0;
};

struct EntryInfo {
  std::string name;
  EntryType type = EntryType::unspecified;
  std::string path;
  int64_t size = 0;
  uint32_t mode = 0;          // permission bits only (the target's for a symlink)
  std::string permissions;    // Go FileMode.String() of the lstat mode
  std::string owner;
  std::string group;
  std::optional<Timespec> modified_time;  // absent when zero
  std::optional<std::string> symlink_target;
  std::map<std::string, std::string> metadata;
};

// Go's os.FileMode bits (io/fs), in FileMode.String()'s letter order "dalTLDpSugct?".
namespace go_mode {
inline constexpr uint32_t dir = 1u << 31;
inline constexpr uint32_t append = 1u << 30;
inline constexpr uint32_t exclusive = 1u << 29;
inline constexpr uint32_t temporary = 1u << 28;
inline constexpr uint32_t symlink = 1u << 27;
inline constexpr uint32_t device = 1u << 26;
inline constexpr uint32_t named_pipe = 1u << 25;
inline constexpr uint32_t socket = 1u << 24;
inline constexpr uint32_t setuid = 1u << 23;
inline constexpr uint32_t setgid = 1u << 22;
inline constexpr uint32_t char_device = 1u << 21;
inline constexpr uint32_t sticky = 1u << 20;
inline constexpr uint32_t irregular = 1u << 19;
}  // namespace go_mode

// A stat st_mode as Go's os package converts it to a FileMode.
uint32_t go_file_mode(mode_t st_mode);
// FileMode.String(): set type letters in "dalTLDpSugct?" order ('-' if none), then rwxrwxrwx.
std::string file_mode_string(uint32_t go_file_mode);

// filepath.Base: the last element, trailing slashes ignored; "/" for all-slashes, "." for "".
std::string base_name(std::string_view path);

// The user.e2b.* xattrs of `path` (symlinks followed), prefix stripped; entries whose key or
// value is not UTF-8 are skipped, errors mean no metadata.
std::map<std::string, std::string> read_metadata(const std::string& path);

// Builds the entry for `path` from its lstat result `st` (which the caller already has).
EntryInfo make_entry_info(const std::string& path, const struct stat& st, const system::UserDatabase& users);

// lstat + make_entry_info. nullopt with `err` set to the errno when lstat fails.
std::optional<EntryInfo> entry_info(const std::string& path, const system::UserDatabase& users, int& err);

}  // namespace cove::filesystem
