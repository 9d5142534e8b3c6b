#pragma once
// Small file helpers shared by the shim side and the sandbox launcher: whole-file reads and
// writes for procfs/cgroupfs/sysfs, and a removal that never leaves its filesystem.
// Errors are std::system_error naming the operation, never the path (paths stay out of messages).
#include <string>

namespace cove::shim::container {

std::string read_text(const std::string& path);             // throws
bool try_read_text(const std::string& path, std::string& out);
void write_text(const std::string& path, const std::string& text, const char* what);  // throws
bool try_write_text(const std::string& path, const std::string& text);
bool exists(const std::string& path);

// rm -rf that stays on the filesystem of `path` (a mount point below it is left alone, and so is
// its parent directory). Missing `path` is fine.
void remove_tree(const std::string& path);

[[noreturn]] void throw_errno(const char* what);

}  // namespace cove::shim::container
