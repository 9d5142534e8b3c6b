#pragma once
// The syntax of individual config values, shared by validation and by whoever binds or
// configures them (listeners, the network setup). Pure functions, no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cove::shim {

struct ListenAddress {
  std::string host;  // dotted IPv4, or IPv6 without brackets
  uint16_t port = 0; // 0: any free port
  bool ipv6 = false;
};
// "1.2.3.4:port" or "[v6]:port"; no host names (a listener binds an address, not a lookup).
std::optional<ListenAddress> parse_listen_address(std::string_view text);

struct Ipv4Cidr {
  uint32_t network = 0;  // host byte order; host bits are zero
  int prefix = 0;
};
// "a.b.c.d/p" with strict dotted decimal (no leading zeros) and host bits clear.
std::optional<Ipv4Cidr> parse_ipv4_cidr(std::string_view text);
std::optional<uint32_t> parse_ipv4(std::string_view text);  // host byte order

// A DNS name (labels of [A-Za-z0-9-], 1–63 chars, not starting or ending with '-', ≤ 253 in
// all), optionally followed by ":port" with port 1–65535.
bool is_valid_domain(std::string_view text);
// What the kernel accepts as a network interface name: 1–15 chars of [A-Za-z0-9_.-], not "." or "..".
bool is_valid_interface_name(std::string_view text);
// Template ids and aliases: [a-z0-9][a-z0-9_-]*, at most 64 chars.
bool is_valid_template_name(std::string_view text);

}  // namespace cove::shim
