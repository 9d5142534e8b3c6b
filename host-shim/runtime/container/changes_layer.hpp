#pragma once
// A build sandbox's writable layer, handed over once nothing runs in it: the overlay's work dir
// and the host channel's socket go, and ownership is shifted back from the sandbox's host id range
// to the ids seen inside, so the upper dir can be stacked (idmapped) under later sandboxes as is.
#include <cstdint>
#include <string>

namespace cove::shim::container {

// `changes_dir` holds `upper/` and `work/`. Ids in [id_base, id_base + id_count) become
// id − id_base; others (the overlay's own whiteouts, made as real root) stay. Throws
// std::system_error naming the operation.
void hand_over_changes(const std::string& changes_dir, uint32_t id_base, uint32_t id_count);

}  // namespace cove::shim::container
