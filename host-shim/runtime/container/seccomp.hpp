#pragma once
// The syscall filter every sandbox process runs under, modelled on Docker's default profile:
// an allowlist, everything else fails with EPERM; namespace-creating clone flags refused; clone3
// answers ENOSYS so libc falls back to clone (whose flags a filter can inspect).
// Loaded by the sandbox init right before it execs the agent; inherited by everything after.
namespace cove::shim::container {

// Builds and loads the filter into the calling thread (TSYNC is not needed: single-threaded).
// Does not set no_new_privs (setuid sudo must keep working); the caller holds CAP_SYS_ADMIN in
// the sandbox's user namespace, which the kernel accepts instead. Throws std::runtime_error.
// Order in the sandbox init: configure_sandbox_interfaces, this, restrict_to_default_capabilities
// (which drops CAP_SYS_ADMIN), exec.
void load_sandbox_seccomp_filter();

}  // namespace cove::shim::container
