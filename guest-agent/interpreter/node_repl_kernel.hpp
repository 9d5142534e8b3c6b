#pragma once
// `javascript` and `typescript` contexts: Node running our own driver (resources/node/repl.js)
// as a persistent REPL. Semantics follow E2B's JS kernel: state persists between cells, the last
// expression's value is the main result (util.inspect; promises awaited), top-level await,
// errors as name/message/stack. TypeScript cells are transpiled (no type check) with Debian's
// node-typescript.
#include "interpreter/repl_kernel.hpp"

namespace cove::interpreter {

class NodeReplKernel : public ReplKernel {
 public:
  // launch.language: "javascript" or "typescript".
  NodeReplKernel(KernelLaunch launch, KernelServices services);

 protected:
  ReplProcessSpec prepare() override;
  std::string cell_request(int64_t id, const std::string& code, bool silent) override;
  Reply parse_reply(const std::string& line) override;
  bool interrupt_aborts() const override { return false; }
  std::string program_name() const override { return "node"; }
};

}  // namespace cove::interpreter
