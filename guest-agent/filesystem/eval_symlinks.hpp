#pragma once
// Go's filepath.EvalSymlinks: resolve every symlink in a path, component by component, with at
// most 255 links followed. envd uses it for ListDir's root and for EntryInfo.symlink_target, and
// its error texts end up in messages, so the walk and the errors follow Go's.
#include <string>
#include <string_view>

namespace cove::filesystem {

struct EvalResult {
  enum class Error { none, not_exist, too_many_links, other };
  std::string path;      // the resolved, cleaned path on success
  Error error = Error::none;
  std::string message;   // Go's error text, e.g. "lstat /a/b: no such file or directory"
  bool ok() const { return error == Error::none; }
};

EvalResult eval_symlinks(std::string_view path);

}  // namespace cove::filesystem
