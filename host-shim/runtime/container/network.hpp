#pragma once
// Sandbox networking. Each sandbox has its own network namespace with loopback. With internet
// access it also gets `eth0`, one end of a veth pair whose host end is an *isolated* port of the
// host bridge (so sandboxes cannot reach each other), and egress is NATed out of the host. Traffic
// from sandboxes to any of the host's own addresses (the shim's listeners included) is dropped.
//
//   host:    bridge <cfg.bridge> = first address of cfg.subnet (e.g. 10.88.0.1/16), up
//            iptables: own chains COVE-INPUT (drop everything arriving from the bridge),
//            COVE-FORWARD (bridge → out accepted, replies back accepted, bridge → bridge dropped),
//            COVE-POSTROUTING (MASQUERADE subnet leaving through any other interface);
//            net.ipv4.ip_forward=1
//   sandbox: eth0 = address_for_slot(slot)/prefix, default route via the bridge address; lo up.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cove::shim::container {

struct NetworkConfig {
  std::string bridge = "cove0";
  std::string subnet = "10.88.0.0/16";
};

class HostNetwork {
 public:
  explicit HostNetwork(NetworkConfig config);
  // Idempotent: creates or repairs the bridge, sysctls and iptables chains/rules. Throws
  // std::runtime_error with what failed.
  void ensure();
  // Removes the chains and rules and the bridge (tests, `cove` uninstall). Idempotent.
  void teardown();

  // The sandbox's address for a slot (slot 0 → .0.2 …), and the gateway.
  std::string address_for_slot(int64_t slot) const;
  std::string gateway() const;
  int prefix_length() const;
  // Host-side interface name of a slot's veth: "cv" + 4 hex digits of the bridge name + the
  // slot (fits IFNAMSIZ), so shims with different bridges never pick the same names.
  std::string host_interface(int64_t slot) const;
  // This bridge's iptables chains: "COVE-IN-<bridge>", "COVE-FWD-<bridge>", "COVE-NAT-<bridge>"
  // (at most 24 characters), so each shim owns its chains whole.
  std::string input_chain() const { return "COVE-IN-" + config_.bridge; }
  std::string forward_chain() const { return "COVE-FWD-" + config_.bridge; }
  std::string nat_chain() const { return "COVE-NAT-" + config_.bridge; }

  // Creates the veth pair with its peer already inside the network namespace of `pid` (named
  // eth0 there), attaches the host end to the bridge as an isolated port and brings it up.
  void attach(int64_t slot, pid_t pid) const;
  // Deletes the slot's host interface (the peer goes with it). Idempotent.
  void detach(int64_t slot) const;

 private:
  // Where each of our chains hooks into the built-in ones.
  struct Hook {
    std::string table, builtin, ours;
  };
  std::vector<Hook> hooks() const;
  NetworkConfig config_;
};

// Runs inside the sandbox's network namespace (the sandbox init, before exec): brings lo up and,
// if `address` is not empty, configures eth0 with address/prefix and a default route via gateway.
void configure_sandbox_interfaces(const std::string& address, int prefix_length,
                                  const std::string& gateway);

}  // namespace cove::shim::container
