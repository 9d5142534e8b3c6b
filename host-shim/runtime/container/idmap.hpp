#pragma once
// The sandbox's uid/gid range and the kernel calls that apply it: each slot owns 65536 host ids
// starting at 100000 + slot*65536; the sandbox's root is the first of them.
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace cove::shim::container {

constexpr uint32_t kIdRangeStart = 100000;
constexpr uint32_t kIdRangeSize = 65536;

// Host uid (and gid) of the sandbox's root for `slot`. Throws std::out_of_range if the range
// would not fit in 32-bit ids (the last id, 2^32-1, is reserved by the kernel as invalid).
uint32_t host_base_for_slot(int64_t slot);
// The one uid_map / gid_map line: "0 <base> <count>\n".
std::string id_map_line(uint32_t base, uint32_t count = kIdRangeSize);

// Writes /proc/<pid>/uid_map and gid_map as root of the parent namespace; setgroups stays
// "allow" so sudo/initgroups keep working inside. Throws std::system_error.
void write_id_maps(pid_t pid, uint32_t base, uint32_t count = kIdRangeSize);

// Attaches at `target` a read-only clone of the directory `source` whose ids are shifted through
// the user namespace `userns_fd` (host 0 appears as the sandbox's root). Throws std::system_error.
void idmapped_bind(const std::string& source, int userns_fd, const std::string& target);

}  // namespace cove::shim::container
