#pragma once
// Error texts in the shape Go's os package prints them, because envd's messages embed them
// verbatim ("file not found: lstat /x: no such file or directory") and clients match on them.
#include <string>
#include <string_view>

namespace cove::system {

// syscall.Errno.Error(): the C library's description with a lower-case first letter.
std::string errno_text(int err);

// os.PathError.Error(): "<op> <path>: <errno text>".
std::string path_error(std::string_view op, std::string_view path, int err);

// fmt's %q for a string: Go-syntax double-quoted, with escapes for control characters, quotes,
// backslashes and bytes that are not valid UTF-8.
std::string go_quote(std::string_view s);

// Whether `s` is valid UTF-8 (protobuf strings must be).
bool valid_utf8(std::string_view s);

}  // namespace cove::system
