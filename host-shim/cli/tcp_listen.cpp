#include "cli/tcp_listen.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <charconv>
#include <stdexcept>

namespace cove::shim {
namespace ip = boost::asio::ip;

netio::Acceptor listen_address(netio::net::any_io_executor ex, const std::string& host_port) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("listen address needs a port: " + host_port);
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  auto port_text = std::string_view(host_port).substr(colon + 1);
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || p != port_text.data() + port_text.size() || port > 65535) {
    throw std::runtime_error("bad port in listen address: " + host_port);
  }
  ip::tcp::endpoint endpoint(ip::make_address(host), static_cast<uint16_t>(port));
  netio::Acceptor acceptor(ex);
  boost::asio::generic::stream_protocol::endpoint generic(endpoint.data(), endpoint.size());
  acceptor.open(generic.protocol());
  acceptor.set_option(boost::asio::socket_base::reuse_address(true));
  if (endpoint.address().is_v6()) {
    // Only the address asked for: [::1] must not also take 127.0.0.1's port.
    int one = 1;
    ::setsockopt(acceptor.native_handle(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  }
  acceptor.bind(generic);
  acceptor.listen(boost::asio::socket_base::max_listen_connections);
  return acceptor;
}

std::string describe_local(const netio::Acceptor& acceptor) {
  auto local = acceptor.local_endpoint();
  ip::tcp::endpoint tcp;
  std::memcpy(tcp.data(), local.data(), std::min<size_t>(local.size(), sizeof(sockaddr_in6)));
  if (tcp.address().is_v6()) return "[" + tcp.address().to_string() + "]:" + std::to_string(tcp.port());
  return tcp.address().to_string() + ":" + std::to_string(tcp.port());
}

}  // namespace cove::shim
