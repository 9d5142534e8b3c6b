#pragma once
// Docker's default capability set: CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID
// SETFCAP SETPCAP NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE. Everything else leaves the
// bounding set (so not even setuid binaries get it back), the ambient set is cleared.
namespace cove::shim::container {

// For the sandbox init (uid 0 in its user namespace) right before exec. Throws std::runtime_error.
void restrict_to_default_capabilities();

}  // namespace cove::shim::container
