#include "interpreter/kernel_factory.hpp"

#include "interpreter/bash_kernel.hpp"
#include "interpreter/jupyter_kernel.hpp"
#include "interpreter/kernelspec.hpp"
#include "interpreter/node_repl_kernel.hpp"

namespace cove::interpreter {
namespace {

// E2B passes the language as the Jupyter kernel name; these are the names Debian's packages use.
std::string kernelspec_name(const std::string& language) {
  if (language == "python") return "python3";
  if (language == "r") return "ir";
  return language;
}

}  // namespace

std::unique_ptr<Kernel> make_kernel(const KernelServices& services, KernelLaunch launch) {
  const std::string language = launch.language;
  if (language == "javascript" || language == "typescript") {
    return std::make_unique<NodeReplKernel>(std::move(launch), services);
  }
  if (language == "bash") return std::make_unique<BashKernel>(std::move(launch), services);
  auto spec = find_kernelspec(kernelspec_name(language), default_kernelspec_dirs());
  if (!spec) throw KernelError("No such kernel named " + language);
  return std::make_unique<JupyterKernel>(services, std::move(launch), std::move(*spec));
}

}  // namespace cove::interpreter
