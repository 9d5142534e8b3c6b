#pragma once
// A real Jupyter kernel process (Debian's ipykernel, IRkernel, ...) driven over the Jupyter wire
// protocol: shell and control as DEALER, iopub as SUB, spoken through our own ZMTP client.
// One reader coroutine per socket demultiplexes messages to the single running execution by
// parent msg_id (the caller serializes executions); anything else is dropped.
#include <sys/types.h>

#include <chrono>
#include <memory>

#include "interpreter/kernel.hpp"
#include "interpreter/kernelspec.hpp"

namespace cove::interpreter {

class JupyterKernel : public Kernel {
 public:
  struct Timeouts {
    std::chrono::milliseconds startup{60000};          // process start to a working handshake
    std::chrono::milliseconds handshake_resend{250};   // kernel_info_request until answered
    std::chrono::milliseconds restart_grace{5000};     // shutdown_request{restart} before SIGKILL
    std::chrono::milliseconds shutdown_grace{2000};    // shutdown_request before SIGKILL
    std::chrono::milliseconds reply_after_idle{1000};  // idle came first: wait this long for the reply
    std::chrono::milliseconds death_after_break{1000}; // a broken socket: is the process dying?
  };

  JupyterKernel(KernelServices services, KernelLaunch launch, Kernelspec spec);
  JupyterKernel(KernelServices services, KernelLaunch launch, Kernelspec spec, Timeouts timeouts);
  ~JupyterKernel() override;

  net::awaitable<void> start() override;
  net::awaitable<void> execute(std::string code, bool silent, EventSink sink) override;
  void interrupt() override;
  net::awaitable<void> restart() override;
  net::awaitable<void> shutdown() override;

  // The kernel's process (group leader) while one runs, else -1. For tests and diagnostics.
  pid_t pid() const;

 private:
  // Everything lives in Impl, shared with the coroutines and callbacks the kernel spawns, so
  // destroying the kernel while they are suspended is safe: they find it shut down and stop.
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cove::interpreter
