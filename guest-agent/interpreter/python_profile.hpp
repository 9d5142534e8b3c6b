#pragma once
// The IPython profile the python kernel runs with (resources/python/ in the source tree): the
// kernel config (plain-text tracebacks, untruncated sequences, in-memory history) and the startup
// code that adds E2B's rich results (e2b/data, e2b/chart, application/json, PIL images).
#include <string>

namespace cove::interpreter {

// Writes every embedded resource under "python/" into <runtime_dir>/ipython/ (directories 0755,
// files 0644, each file replaced by rename so a running kernel never reads half a file) and
// returns that directory: the kernel's IPYTHONDIR. Python files left in those directories by an
// older agent are removed, so a renamed startup file cannot run twice. Safe to call again while
// kernels use the directory. Throws std::runtime_error naming the path on failure.
//
// The kernel's environment should also carry MPLBACKEND unset (ipykernel picks the inline
// backend) and PYDEVD_DISABLE_FILE_VALIDATION=1; matplotlib's config dir falls back to
// <IPYTHONDIR>/matplotlib by itself when $HOME's is not writable (MPLCONFIGDIR overrides).
std::string write_python_profile(const std::string& runtime_dir);

}  // namespace cove::interpreter
