#pragma once
// Jupyter kernelspecs (<dir>/<name>/kernel.json): how to start a kernel. We read them ourselves
// instead of asking jupyter_client, so Debian's packaged specs (python3, ir) work unchanged.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cove::interpreter {

struct Kernelspec {
  std::string name;
  std::string resource_dir;               // the directory holding kernel.json
  std::vector<std::string> argv;          // with {connection_file} and {resource_dir} placeholders
  std::map<std::string, std::string> env;  // added to the kernel's environment
  std::string interrupt_mode = "signal";  // "signal" (SIGINT to the group) or "message"
  std::string language;
  std::string display_name;
};

// Where Jupyter looks system-wide, in order: /usr/local/share then /usr/share.
std::vector<std::string> default_kernelspec_dirs();

// The first <dir>/<name>/kernel.json among `dirs`. nullopt when no directory has it; throws
// KernelError when the name is invalid or the file is malformed.
std::optional<Kernelspec> find_kernelspec(const std::string& name,
                                          const std::vector<std::string>& dirs = default_kernelspec_dirs());

// Parses kernel.json's text. Throws KernelError on malformed content.
Kernelspec parse_kernelspec(const std::string& json_text, const std::string& name,
                            const std::string& resource_dir);

// argv with {connection_file} and {resource_dir} replaced, as jupyter_client does.
std::vector<std::string> kernel_command(const Kernelspec& spec, const std::string& connection_file);

}  // namespace cove::interpreter
