// Slot → address arithmetic and configuration checks of HostNetwork (no root, no kernel state).
#include <gtest/gtest.h>

#include <stdexcept>

#include "runtime/container/network.hpp"

namespace {

using cove::shim::container::HostNetwork;
using cove::shim::container::NetworkConfig;

TEST(SandboxAddresses, DefaultSubnetSlotsStartAfterTheBridge) {
  HostNetwork network(NetworkConfig{});
  EXPECT_EQ(network.gateway(), "10.88.0.1");
  EXPECT_EQ(network.prefix_length(), 16);
  EXPECT_EQ(network.address_for_slot(0), "10.88.0.2");
  EXPECT_EQ(network.address_for_slot(1), "10.88.0.3");
  EXPECT_EQ(network.address_for_slot(253), "10.88.0.255");  // not a broadcast in a /16
  EXPECT_EQ(network.address_for_slot(254), "10.88.1.0");
  EXPECT_EQ(network.address_for_slot(65532), "10.88.255.254");  // the last one
  EXPECT_THROW(network.address_for_slot(65533), std::runtime_error);  // would be the broadcast
  EXPECT_THROW(network.address_for_slot(-1), std::runtime_error);
}

TEST(SandboxAddresses, SmallSubnetHasRoomForItsHostsOnly) {
  HostNetwork network(NetworkConfig{"covet1", "10.213.0.0/24"});
  EXPECT_EQ(network.gateway(), "10.213.0.1");
  EXPECT_EQ(network.prefix_length(), 24);
  EXPECT_EQ(network.address_for_slot(252), "10.213.0.254");
  EXPECT_THROW(network.address_for_slot(253), std::runtime_error);
  try {
    network.address_for_slot(300);
    FAIL() << "slot 300 accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("slot 300"), std::string::npos) << e.what();
  }
}

TEST(SandboxAddresses, HostInterfaceNamesFitIfnamsizAndDifferPerBridge) {
  HostNetwork cove0(NetworkConfig{"cove0", "10.0.0.0/8"});
  HostNetwork other(NetworkConfig{"cove-e2e", "10.0.0.0/8"});
  const std::string first = cove0.host_interface(0);
  EXPECT_EQ(first.rfind("cv", 0), 0u);
  EXPECT_EQ(first.size(), 7u);  // cv + 4 hex + "0"
  EXPECT_EQ(cove0.host_interface(0), first);  // stable
  EXPECT_NE(other.host_interface(0), first);
  EXPECT_EQ(cove0.host_interface(16777212).size(), 14u);  // the largest /8 slot still fits IFNAMSIZ
  EXPECT_NE(cove0.host_interface(1), cove0.host_interface(10));
  EXPECT_THROW(cove0.host_interface(-3), std::runtime_error);
}

TEST(SandboxAddresses, BadConfigurationIsRefusedUpFront) {
  EXPECT_THROW(HostNetwork(NetworkConfig{"cove0", "10.88.0.1/16"}), std::runtime_error);  // host bits
  EXPECT_THROW(HostNetwork(NetworkConfig{"cove0", "10.88.0.0/30"}), std::runtime_error);  // too small
  EXPECT_THROW(HostNetwork(NetworkConfig{"cove0", "10.88.0.0"}), std::runtime_error);
  EXPECT_THROW(HostNetwork(NetworkConfig{"cove0", "10.88.0.0/x"}), std::runtime_error);
  EXPECT_THROW(HostNetwork(NetworkConfig{"cove0", "not-an-ip/16"}), std::runtime_error);
  EXPECT_THROW(HostNetwork(NetworkConfig{"", "10.88.0.0/16"}), std::runtime_error);
  EXPECT_THROW(HostNetwork(NetworkConfig{"a-very-long-bridge", "10.88.0.0/16"}), std::runtime_error);
  EXPECT_THROW(HostNetwork(NetworkConfig{"br 0", "10.88.0.0/16"}), std::runtime_error);
  EXPECT_NO_THROW(HostNetwork(NetworkConfig{"cove0", "172.30.0.0/29"}));
}

}  // namespace
