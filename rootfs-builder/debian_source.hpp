#pragma once
// The Debian source of a template (`fromDebian`, used by the built-in `base`): a minbase tree
// made by debootstrap from the host's own Debian mirror, kept as a content-addressed layer keyed
// by suite, variant and mirror, so it is made once per machine.
#include <atomic>
#include <functional>
#include <string>

#include "rootfs-builder/layer_store.hpp"

namespace cove::builder {

struct DebianSource {
  std::string suite = "bookworm";
  std::string mirror;  // "" = the host's apt configuration
};

// The first `deb` URI of `suite` in the host's apt sources (deb822 debian.sources, then
// sources.list); "" if none. The argument files are for tests.
std::string host_debian_mirror(const std::string& suite,
                               const std::string& deb822 = "/etc/apt/sources.list.d/debian.sources",
                               const std::string& one_line = "/etc/apt/sources.list");

bool valid_suite(const std::string& suite);  // [a-z]+, as Debian names them

// Blocking; throws std::runtime_error with a client-safe message. `log` gets progress lines.
// Once `cancel` turns true (the shim stops), debootstrap is ended and the call throws.
std::string debian_layer(const DebianSource& source, const LayerStore& layers,
                         const std::function<void(const std::string&)>& log, const std::atomic<bool>& cancel);

}  // namespace cove::builder
