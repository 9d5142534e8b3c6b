#pragma once
// Go's %q rendering of a string, for error messages that must read exactly as envd's.
#include <string>
#include <string_view>

namespace cove::files {

std::string go_quote(std::string_view s);

// An errno as Go's syscall.Errno prints it ("no space left on device").
std::string go_errno(int err);

// Go's *PathError text: "<op> <path>: <errno text>".
std::string go_path_error(std::string_view op, std::string_view path, int err);

}  // namespace cove::files
