#include "interpreter/kernelspec.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "interpreter/kernel.hpp"

namespace cove::interpreter {
namespace {

// Jupyter's rule for kernel names; it also keeps a name from walking out of the directory.
bool valid_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (unsigned char c : name) {
    if (!std::isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

}  // namespace

std::vector<std::string> default_kernelspec_dirs() {
  return {"/usr/local/share/jupyter/kernels", "/usr/share/jupyter/kernels"};
}

std::optional<Kernelspec> find_kernelspec(const std::string& name, const std::vector<std::string>& dirs) {
  if (!valid_name(name)) throw KernelError("invalid kernel name '" + name + "'");
  for (const auto& dir : dirs) {
    std::string resource_dir = dir + "/" + name;
    std::string path = resource_dir + "/kernel.json";
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw KernelError("cannot read the kernelspec of '" + name + "'");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_kernelspec(text.str(), name, resource_dir);
  }
  return std::nullopt;
}

Kernelspec parse_kernelspec(const std::string& json_text, const std::string& name,
                            const std::string& resource_dir) {
  const std::string what = "kernelspec '" + name + "': ";
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw KernelError(what + "kernel.json is not a JSON object");
  Kernelspec spec;
  spec.name = name;
  spec.resource_dir = resource_dir;

  auto argv = j.find("argv");
  if (argv == j.end() || !argv->is_array() || argv->empty()) throw KernelError(what + "argv must be a non-empty list");
  for (const auto& a : *argv) {
    if (!a.is_string()) throw KernelError(what + "argv must hold strings");
    spec.argv.push_back(a.get<std::string>());
  }
  if (spec.argv.front().empty()) throw KernelError(what + "argv[0] is empty");

  if (auto env = j.find("env"); env != j.end() && !env->is_null()) {
    if (!env->is_object()) throw KernelError(what + "env must be an object");
    for (const auto& [k, v] : env->items()) {
      if (!v.is_string()) throw KernelError(what + "env values must be strings");
      if (k.empty() || k.find('=') != std::string::npos) throw KernelError(what + "invalid env name '" + k + "'");
      spec.env[k] = v.get<std::string>();
    }
  }
  if (auto mode = j.find("interrupt_mode"); mode != j.end() && !mode->is_null()) {
    if (!mode->is_string() || (*mode != "signal" && *mode != "message")) {
      throw KernelError(what + "interrupt_mode must be \"signal\" or \"message\"");
    }
    spec.interrupt_mode = mode->get<std::string>();
  }
  if (auto lang = j.find("language"); lang != j.end() && lang->is_string()) spec.language = lang->get<std::string>();
  if (auto dn = j.find("display_name"); dn != j.end() && dn->is_string()) spec.display_name = dn->get<std::string>();
  return spec;
}

std::vector<std::string> kernel_command(const Kernelspec& spec, const std::string& connection_file) {
  std::vector<std::string> out = spec.argv;
  for (auto& a : out) {
    replace_all(a, "{connection_file}", connection_file);
    replace_all(a, "{resource_dir}", spec.resource_dir);
  }
  return out;
}

}  // namespace cove::interpreter
