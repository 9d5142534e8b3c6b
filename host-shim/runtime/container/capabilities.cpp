// Narrows the sandbox init to Docker's default capability set before it execs the agent.
#include "runtime/container/capabilities.hpp"

#include <sys/capability.h>
#include <sys/prctl.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cove::shim::container {
namespace {

constexpr cap_value_t kDefaultSet[] = {
    CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_FSETID,   CAP_FOWNER,     CAP_MKNOD,
    CAP_NET_RAW, CAP_SETGID,      CAP_SETUID,   CAP_SETFCAP,    CAP_SETPCAP,
    CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_KILL, CAP_AUDIT_WRITE,
};

bool in_default_set(int cap) {
  for (cap_value_t c : kDefaultSet) {
    if (c == cap) return true;
  }
  return false;
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("capabilities: " + what + ": " + std::strerror(errno));
}

// The running kernel's highest capability, which may be newer than the one libcap was built
// with; every one of them must leave the bounding set.
int last_capability() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int last = -1;
  if (in >> last && last >= 0 && last < 64) return last;
  // No /proc (should not happen in the sandbox init): probe the bounding set instead.
  last = 0;
  while (last < 63 && prctl(PR_CAPBSET_READ, last + 1, 0, 0, 0) >= 0) ++last;
  return last;
}

struct CapDeleter {
  void operator()(cap_t caps) const { cap_free(caps); }
};
using Caps = std::unique_ptr<std::remove_pointer_t<cap_t>, CapDeleter>;

}  // namespace

void restrict_to_default_capabilities() {
  // Bounding set first (dropping needs CAP_SETPCAP, which we still hold): what leaves it cannot
  // come back through exec, not even of a setuid-root binary like sudo.
  const int last = last_capability();
  for (int cap = 0; cap <= last; ++cap) {
    if (in_default_set(cap)) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      fail("drop capability " + std::to_string(cap) + " from the bounding set");
    }
  }
  // Ambient capabilities would survive exec for non-root users; none are wanted.
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    fail("clear the ambient set");
  }

  // Permitted and effective become the default set (limited to what we actually hold, so an
  // outer runtime that already withheld one does not make this fail). Inheritable stays empty,
  // as Docker has done since 20.10.14 (CVE-2022-24769): a non-empty inheritable set would hand
  // file-inheritable capabilities to non-root users' execs. Root's exec gets its capabilities from
  // the bounding set (the agent runs as uid 0; sudo is setuid-root), so nothing needs it.
  Caps current(cap_get_proc());
  if (!current) fail("read the current capabilities");
  std::vector<cap_value_t> keep;
  for (cap_value_t cap : kDefaultSet) {
    cap_flag_value_t permitted = CAP_CLEAR;
    if (cap_get_flag(current.get(), cap, CAP_PERMITTED, &permitted) == 0 && permitted == CAP_SET) {
      keep.push_back(cap);
    }
  }
  Caps wanted(cap_init());
  if (!wanted) fail("allocate a capability set");
  if (!keep.empty()) {
    if (cap_set_flag(wanted.get(), CAP_PERMITTED, static_cast<int>(keep.size()), keep.data(),
                     CAP_SET) != 0 ||
        cap_set_flag(wanted.get(), CAP_EFFECTIVE, static_cast<int>(keep.size()), keep.data(),
                     CAP_SET) != 0) {
      fail("build the capability set");
    }
  }
  if (cap_set_proc(wanted.get()) != 0) fail("set the process capabilities");
}

}  // namespace cove::shim::container
