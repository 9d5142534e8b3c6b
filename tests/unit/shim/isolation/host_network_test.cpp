// HostNetwork end to end, entirely inside throwaway network namespaces: the test thread moves into
// a fresh namespace that plays the host (bridge, iptables, ip_forward are all per namespace), so
// a real shim's cove0 and COVE-* chains in the machine's own namespace are never touched, and
// everything disappears with the namespaces even if an assertion stops the test halfway.
//
//   outside ns (10.214.0.2) ── veth ── emulated host ── bridge covet<n> 10.213.0.1/24
//                                                          ├── cv…0 ── sandbox A eth0 10.213.0.2
//                                                          └── cv…1 ── sandbox B eth0 10.213.0.3
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/container/network.hpp"

namespace {

using cove::shim::container::configure_sandbox_interfaces;
using cove::shim::container::HostNetwork;
using cove::shim::container::NetworkConfig;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Output of a shell command run in the test thread's current network namespace.
std::string shell(const std::string& command, int* exit_code = nullptr) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return "popen failed";
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  int status = pclose(pipe);
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

int count_lines_containing(const std::string& text, const std::string& needle) {
  int count = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) count += line.find(needle) != std::string::npos;
  return count;
}

// Moves the calling thread into a new network namespace for the object's lifetime.
class EmulatedHost {
 public:
  EmulatedHost() {
    original_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (original_ < 0 || unshare(CLONE_NEWNET) != 0) throw std::runtime_error("cannot unshare netns");
    self_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    shell("ip link set lo up");
  }
  ~EmulatedHost() {
    if (setns(original_, CLONE_NEWNET) != 0) std::abort();  // never continue in the wrong netns
    close(original_);
    close(self_);
  }
  int fd() const { return self_; }

 private:
  int original_ = -1;
  int self_ = -1;
};

// A child process alone in a new network namespace, standing in for a sandbox init: it waits
// for the host to attach it, then configures its interfaces itself when told to.
class NetnsProcess {
 public:
  NetnsProcess() {
    int to_child[2], to_parent[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(to_parent, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe failed");
    }
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      close(to_child[1]);
      close(to_parent[0]);
      serve(to_child[0], to_parent[1]);
    }
    close(to_child[0]);
    close(to_parent[1]);
    commands_ = to_child[1];
    replies_ = to_parent[0];
    if (read_line(replies_) != "ready") throw std::runtime_error("namespace child failed");
    ns_ = open(("/proc/" + std::to_string(pid_) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC);
  }
  ~NetnsProcess() {
    close(commands_);  // EOF: the child exits
    int status;
    waitpid(pid_, &status, 0);
    close(replies_);
    close(ns_);
  }
  pid_t pid() const { return pid_; }
  int fd() const { return ns_; }

  // "ok" or the error configure_sandbox_interfaces threw inside the namespace.
  std::string configure(const std::string& address, int prefix, const std::string& gateway) {
    std::string line = address + " " + std::to_string(prefix) + " " + gateway + "\n";
    if (write(commands_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return "write failed";
    return read_line(replies_);
  }

 private:
  static std::string read_line(int fd) {
    std::string line;
    char c;
    while (read(fd, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }
  [[noreturn]] static void serve(int commands, int replies) {
    auto reply = [&](const std::string& text) {
      std::string line = text + "\n";
      (void)!write(replies, line.data(), line.size());
    };
    if (unshare(CLONE_NEWNET) != 0) _exit(1);
    reply("ready");
    for (;;) {
      std::istringstream in(read_line(commands));
      std::string address, gateway;
      int prefix = 0;
      if (!(in >> address >> prefix >> gateway)) _exit(0);
      try {
        configure_sandbox_interfaces(address, prefix, gateway);
        reply("ok");
      } catch (const std::exception& e) {
        reply(std::string("error: ") + e.what());
      }
    }
  }
  pid_t pid_ = -1;
  int commands_ = -1, replies_ = -1, ns_ = -1;
};

// A socket that belongs to another network namespace (sockets keep the namespace they were made
// in), made by briefly switching the test thread there.
int socket_in(int ns_fd) {
  int here = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (here < 0 || setns(ns_fd, CLONE_NEWNET) != 0) throw std::runtime_error("setns failed");
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (setns(here, CLONE_NEWNET) != 0) std::abort();
  close(here);
  if (fd < 0) throw std::runtime_error("socket failed");
  return fd;
}

sockaddr_in endpoint(const std::string& ip, uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &address.sin_addr);
  return address;
}

struct Listener {
  int fd = -1;
  uint16_t port = 0;
  ~Listener() { if (fd >= 0) close(fd); }
};

// An ephemeral-port TCP listener on `ip` inside the given namespace.
void listen_in(int ns_fd, const std::string& ip, Listener& listener) {
  listener.fd = socket_in(ns_fd);
  sockaddr_in address = endpoint(ip, 0);
  if (bind(listener.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(listener.fd, 16) != 0) {
    throw std::runtime_error("cannot listen on " + ip + ": " + std::strerror(errno));
  }
  socklen_t length = sizeof address;
  getsockname(listener.fd, reinterpret_cast<sockaddr*>(&address), &length);
  listener.port = ntohs(address.sin_port);
}

// Whether a TCP connection from inside `ns_fd` to ip:port completes within the timeout.
bool connects(int ns_fd, const std::string& ip, uint16_t port, int timeout_ms) {
  int fd = socket_in(ns_fd);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  sockaddr_in address = endpoint(ip, port);
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    ok = true;
  } else if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, timeout_ms) == 1) {
      int error = 0;
      socklen_t length = sizeof error;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      ok = error == 0;
    }
  }
  close(fd);
  return ok;
}

// Packet counter of the first rule in one of our chains (proves which rule dropped something).
long first_rule_packets(const std::string& table, const std::string& chain) {
  std::istringstream in(shell("iptables -w -t " + table + " -L " + chain + " -v -x -n"));
  std::string line;
  std::getline(in, line);  // Chain ...
  std::getline(in, line);  // header
  if (!std::getline(in, line)) return -1;
  return std::atol(line.c_str());
}

std::string test_bridge() { return "covet" + std::to_string(getpid() % 1000); }

TEST(HostNetwork, SandboxesReachOutsideButNotEachOtherNorTheHost) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  EmulatedHost host;
  const std::string bridge = test_bridge();
  HostNetwork network(NetworkConfig{bridge, "10.213.0.0/24"});
  ASSERT_NO_THROW(network.ensure());

  // Idempotent: a second ensure() leaves exactly the same rules, each hook once, at the top.
  const std::string first = shell("iptables-save");
  ASSERT_NO_THROW(network.ensure());
  const std::string second = shell("iptables-save");
  EXPECT_EQ(count_lines_containing(first, "COVE"), count_lines_containing(second, "COVE")) << second;
  // Chains of its own, named after the bridge, so another shim's bridge never touches them.
  EXPECT_EQ(network.input_chain(), "COVE-IN-" + bridge);
  EXPECT_EQ(count_lines_containing(second, "-A INPUT -j COVE-IN-" + bridge), 1) << second;
  EXPECT_EQ(count_lines_containing(second, "-A FORWARD -j COVE-FWD-" + bridge), 1) << second;
  EXPECT_EQ(count_lines_containing(second, "-A POSTROUTING -j COVE-NAT-" + bridge), 1) << second;
  EXPECT_NE(second.find("-A COVE-NAT-" + bridge + " -s 10.213.0.0/24 ! -o " + bridge + " -j MASQUERADE"),
            std::string::npos) << second;
  EXPECT_EQ(read_file("/proc/sys/net/ipv4/ip_forward"), "1\n");
  EXPECT_EQ(read_file("/proc/sys/net/ipv6/conf/" + bridge + "/disable_ipv6"), "1\n");
  EXPECT_NE(shell("ip -4 -o addr show dev " + bridge).find("10.213.0.1/24"), std::string::npos);

  // The outside world: its own namespace behind a plain veth of the host.
  NetnsProcess outside;
  int rc = 0;
  std::string out = shell("ip link add covo0 type veth peer name eth1 netns " +
                          std::to_string(outside.pid()) +
                          " && ip addr add 10.214.0.1/30 dev covo0 && ip link set covo0 up"
                          " && nsenter -t " + std::to_string(outside.pid()) +
                          " -n sh -c 'ip addr add 10.214.0.2/30 dev eth1 && ip link set eth1 up"
                          " && ip link set lo up'", &rc);
  ASSERT_EQ(rc, 0) << out;

  NetnsProcess a, b;
  ASSERT_NO_THROW(network.attach(0, a.pid()));
  ASSERT_NO_THROW(network.attach(1, b.pid()));
  EXPECT_EQ(a.configure(network.address_for_slot(0), network.prefix_length(), network.gateway()), "ok");
  EXPECT_EQ(b.configure(network.address_for_slot(1), network.prefix_length(), network.gateway()), "ok");

  // Inside a: eth0 with its address, a default route via the bridge.
  const std::string a_pid = std::to_string(a.pid());
  EXPECT_NE(shell("nsenter -t " + a_pid + " -n ip -4 -o addr show dev eth0").find("10.213.0.2/24"),
            std::string::npos);
  EXPECT_NE(read_file("/proc/" + a_pid + "/net/route").find("eth0\t00000000\t0100D50A"),
            std::string::npos) << read_file("/proc/" + a_pid + "/net/route");
  const std::string port0 = network.host_interface(0);
  EXPECT_EQ(port0.rfind("cv", 0), 0u);
  EXPECT_LE(port0.size(), 15u);
  EXPECT_NE(port0, HostNetwork(NetworkConfig{bridge + "x", "10.213.0.0/24"}).host_interface(0));
  EXPECT_NE(shell("bridge -d link show dev " + port0).find("isolated on"), std::string::npos);
  EXPECT_NE(shell("ip -o link show dev " + port0).find("master " + bridge), std::string::npos);

  Listener outside_listener, b_listener, bridge_listener, host_other_listener;
  listen_in(outside.fd(), "10.214.0.2", outside_listener);
  listen_in(b.fd(), "10.213.0.3", b_listener);
  listen_in(host.fd(), "10.213.0.1", bridge_listener);
  listen_in(host.fd(), "10.214.0.1", host_other_listener);

  // Both sandboxes reach the outside (forwarded, masqueraded).
  EXPECT_TRUE(connects(a.fd(), "10.214.0.2", outside_listener.port, 2000));
  EXPECT_TRUE(connects(b.fd(), "10.214.0.2", outside_listener.port, 2000));
  // b's listener is alive (from b itself)...
  EXPECT_TRUE(connects(b.fd(), "10.213.0.3", b_listener.port, 2000));
  // ...but a cannot reach it over the bridge (isolated ports)...
  EXPECT_FALSE(connects(a.fd(), "10.213.0.3", b_listener.port, 400));
  // ...nor routed through the host.
  out = shell("nsenter -t " + a_pid + " -n ip route add 10.213.0.3/32 via 10.213.0.1", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_FALSE(connects(a.fd(), "10.213.0.3", b_listener.port, 400));
  EXPECT_GT(first_rule_packets("filter", network.forward_chain()), 0) << "the bridge-to-bridge DROP did not see it";

  // No host address is reachable: neither the bridge's nor any other.
  EXPECT_FALSE(connects(a.fd(), "10.213.0.1", bridge_listener.port, 400));
  EXPECT_FALSE(connects(a.fd(), "10.214.0.1", host_other_listener.port, 400));
  EXPECT_GT(first_rule_packets("filter", network.input_chain()), 0) << "the INPUT DROP did not see it";

  // Bad attaches fail clearly and leave nothing behind.
  EXPECT_THROW(network.attach(0, a.pid()), std::runtime_error);  // slot 0's interface exists
  EXPECT_THROW(network.attach(5, 0x3ffffff0), std::runtime_error);  // no such process
  EXPECT_EQ(if_nametoindex(network.host_interface(5).c_str()), 0u);
  EXPECT_THROW(network.attach(253, a.pid()), std::runtime_error);  // no address for the slot

  // Detach removes both ends; it is idempotent.
  EXPECT_NO_THROW(network.detach(0));
  EXPECT_NO_THROW(network.detach(1));
  EXPECT_NO_THROW(network.detach(0));
  EXPECT_EQ(if_nametoindex(port0.c_str()), 0u);
  EXPECT_EQ(if_nametoindex(network.host_interface(1).c_str()), 0u);
  EXPECT_EQ(read_file("/proc/" + a_pid + "/net/dev").find("eth0"), std::string::npos);

  // Teardown removes our chains, hooks and the bridge, and only those.
  shell("iptables -w -N KEEP-ME && iptables -w -A INPUT -j KEEP-ME");
  EXPECT_NO_THROW(network.teardown());
  EXPECT_NO_THROW(network.teardown());
  const std::string after = shell("iptables-save");
  EXPECT_EQ(count_lines_containing(after, "COVE"), 0) << after;
  EXPECT_EQ(count_lines_containing(after, "-A INPUT -j KEEP-ME"), 1) << after;
  EXPECT_EQ(if_nametoindex(bridge.c_str()), 0u);
}

TEST(HostNetwork, ConfigureWithoutAddressOnlyBringsLoopbackUp) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  NetnsProcess sandbox;
  EXPECT_EQ(sandbox.configure("-", 24, "-"), "error: network: sandbox address is not an IPv4 address: '-'");
  // The command line protocol has no empty field, so call it in a child of our own instead.
  int to_parent[2];
  ASSERT_EQ(pipe(to_parent), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(to_parent[0]);
    std::string result = "ok";
    try {
      if (unshare(CLONE_NEWNET) != 0) throw std::runtime_error("unshare");
      configure_sandbox_interfaces("", 0, "");
      if (read_file("/proc/thread-self/net/dev").find("eth0") != std::string::npos) result = "eth0?";
      int fd = socket(AF_INET, SOCK_DGRAM, 0);
      ifreq request{};
      std::strcpy(request.ifr_name, "lo");
      if (ioctl(fd, SIOCGIFFLAGS, &request) != 0 || !(request.ifr_flags & IFF_UP)) result = "lo down";
    } catch (const std::exception& e) {
      result = e.what();
    }
    (void)!write(to_parent[1], result.data(), result.size());
    _exit(0);
  }
  close(to_parent[1]);
  char buffer[256] = {};
  ssize_t n = read(to_parent[0], buffer, sizeof buffer - 1);
  close(to_parent[0]);
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(std::string(buffer, n > 0 ? n : 0), "ok");
}

TEST(HostNetwork, AttachAndDetachTakeAboutAMillisecond) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  EmulatedHost host;
  HostNetwork network(NetworkConfig{test_bridge(), "10.213.0.0/24"});
  ASSERT_NO_THROW(network.ensure());
  NetnsProcess sandbox;
  std::vector<double> attach_ms, detach_ms;
  for (int i = 0; i < 40; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    network.attach(7, sandbox.pid());
    auto t1 = std::chrono::steady_clock::now();
    network.detach(7);
    auto t2 = std::chrono::steady_clock::now();
    attach_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    detach_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  std::sort(attach_ms.begin(), attach_ms.end());
  std::sort(detach_ms.begin(), detach_ms.end());
  const double attach_median = attach_ms[attach_ms.size() / 2];
  const double detach_median = detach_ms[detach_ms.size() / 2];
  std::cout << "[ metrics  ] attach median " << attach_median << " ms, detach median "
            << detach_median << " ms (40 runs)\n";
  RecordProperty("attach_median_us", static_cast<int>(attach_median * 1000));
  RecordProperty("detach_median_us", static_cast<int>(detach_median * 1000));
  EXPECT_LT(attach_median, 20.0);
  EXPECT_LT(detach_median, 50.0);
  EXPECT_NO_THROW(network.teardown());
}

}  // namespace
