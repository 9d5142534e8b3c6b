#pragma once
// Which backend runs a language: Jupyter kernels where the image has a kernelspec (python through
// python3-ipykernel, r through r-cran-irkernel, any other installed spec by its name), the agent's
// own REPLs for javascript/typescript (node) and bash.
#include <memory>

#include "interpreter/kernel.hpp"

namespace cove::interpreter {

// Throws KernelError when the language has no backend in this image.
std::unique_ptr<Kernel> make_kernel(const KernelServices& services, KernelLaunch launch);

}  // namespace cove::interpreter
