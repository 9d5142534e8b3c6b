#pragma once
// `bash` contexts: one persistent interactive `bash --noprofile --norc` per kernel, so variables,
// `cd`, functions and exports carry over between cells, and SIGINT aborts the running cell (as
// Ctrl-C does at a terminal) while the shell stays alive.
//
// Each cell is written to a file and run as `source <file> </dev/null` with the reply descriptor
// closed, so user code cannot read the commands meant for the shell nor forge a reply. The
// shell's PROMPT_COMMAND (read-only) reports "<status> <cell id>" on that descriptor when the cell
// is over. stdout and stderr share one pipe and are reported as stdout, as E2B's bash kernel (a
// pty) does. A non-zero status is ExecutionFailed{"", "<status>", ""} as bash_kernel reports it.
#include "interpreter/repl_kernel.hpp"

namespace cove::interpreter {

class BashKernel : public ReplKernel {
 public:
  BashKernel(KernelLaunch launch, KernelServices services);
  ~BashKernel() override;

 protected:
  ReplProcessSpec prepare() override;
  std::string setup_request() override;
  std::string cell_request(int64_t id, const std::string& code, bool silent) override;
  Reply parse_reply(const std::string& line) override;
  bool interrupt_aborts() const override { return true; }
  std::string program_name() const override { return "bash"; }

 private:
  void remove_cell_dir();
  std::string cell_dir_;  // private to this kernel: holds the cell file
};

}  // namespace cove::interpreter
