// Placeholder until the isolation work lands.
#include "runtime/container/network.hpp"

#include <stdexcept>

namespace cove::shim::container {
HostNetwork::HostNetwork(NetworkConfig config) : config_(std::move(config)) {}
void HostNetwork::ensure() { throw std::runtime_error("host network not implemented yet"); }
void HostNetwork::teardown() {}
std::string HostNetwork::address_for_slot(int64_t) const { return ""; }
std::string HostNetwork::gateway() const { return ""; }
int HostNetwork::prefix_length() const { return 16; }
std::string HostNetwork::host_interface(int64_t slot) { return "cvh" + std::to_string(slot); }
void HostNetwork::attach(int64_t, pid_t) const { throw std::runtime_error("network attach not implemented yet"); }
void HostNetwork::detach(int64_t) const {}
void configure_sandbox_interfaces(const std::string&, int, const std::string&) {
  throw std::runtime_error("sandbox interfaces not implemented yet");
}
}  // namespace cove::shim::container
