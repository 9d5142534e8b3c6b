// Sandbox networking: the host bridge and firewall (ensure/teardown, once per shim start), the
// per-sandbox veth (attach/detach, rtnetlink directly: it runs on every create and must be fast),
// and the sandbox-side interface setup (configure_sandbox_interfaces).
#include "runtime/container/network.hpp"

// <net/if.h> before any <linux/...> header: glibc then keeps the kernel's copies of its types out.
#include <net/if.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace cove::shim::container {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("network: " + what); }

std::string errno_text(int err) { return std::strerror(err); }

// ---------------------------------------------------------------------------------------------
// A minimal rtnetlink client: build one request, send it, read replies until the kernel's ack.

class Request {
 public:
  Request(uint16_t type, uint16_t flags) {
    nlmsghdr header{};
    header.nlmsg_type = type;
    header.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
    append(&header, sizeof header);
  }
  template <typename T>
  void add_struct(const T& value) { append(&value, sizeof value); }
  void add(uint16_t type, const void* data, size_t size) {
    rtattr attr{};
    attr.rta_type = type;
    attr.rta_len = static_cast<uint16_t>(RTA_LENGTH(size));
    append(&attr, sizeof attr);
    append(data, size);
  }
  void add_u32(uint16_t type, uint32_t value) { add(type, &value, sizeof value); }
  void add_u8(uint16_t type, uint8_t value) { add(type, &value, sizeof value); }
  void add_string(uint16_t type, const std::string& value) {
    add(type, value.c_str(), value.size() + 1);
  }
  // Opens a nested attribute; close it with end_nest(returned offset).
  size_t begin_nest(uint16_t type) {
    size_t offset = bytes_.size();
    rtattr attr{};
    attr.rta_type = static_cast<uint16_t>(type | NLA_F_NESTED);
    append(&attr, sizeof attr);
    return offset;
  }
  void end_nest(size_t offset) {
    auto* attr = reinterpret_cast<rtattr*>(bytes_.data() + offset);
    attr->rta_len = static_cast<uint16_t>(bytes_.size() - offset);
  }
  nlmsghdr* finish(uint32_t seq) {
    auto* header = reinterpret_cast<nlmsghdr*>(bytes_.data());
    header->nlmsg_len = static_cast<uint32_t>(bytes_.size());
    header->nlmsg_seq = seq;
    return header;
  }

 private:
  void append(const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
    bytes_.resize(NLMSG_ALIGN(bytes_.size()), 0);  // every piece is 4-byte aligned
  }
  std::vector<char> bytes_;
};

class Netlink {
 public:
  Netlink() {
    fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd_ < 0) fail("cannot open a netlink socket: " + errno_text(errno));
    int on = 1;
    // Kernel explanations in errors, and acks without a copy of our request.
    setsockopt(fd_, SOL_NETLINK, NETLINK_EXT_ACK, &on, sizeof on);
    setsockopt(fd_, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof on);
    sockaddr_nl local{};
    local.nl_family = AF_NETLINK;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      int err = errno;
      close(fd_);
      fail("cannot bind a netlink socket: " + errno_text(err));
    }
  }
  ~Netlink() { close(fd_); }
  Netlink(const Netlink&) = delete;
  Netlink& operator=(const Netlink&) = delete;

  // Returns 0 or the kernel's errno; `message` gets the kernel's extended-ack text if any.
  // `on_reply` sees every non-ack message answering this request.
  int call(Request& request, std::string* message = nullptr,
           const std::function<void(const nlmsghdr*)>& on_reply = {}) {
    const uint32_t seq = ++seq_;
    nlmsghdr* header = request.finish(seq);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    ssize_t sent;
    do {
      sent = sendto(fd_, header, header->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
                    sizeof kernel);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) fail("netlink send failed: " + errno_text(errno));

    alignas(nlmsghdr) char buffer[32768];
    for (;;) {
      ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("netlink receive failed: " + errno_text(errno));
      }
      int remaining = static_cast<int>(n);
      for (auto* reply = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(reply, remaining);
           reply = NLMSG_NEXT(reply, remaining)) {
        if (reply->nlmsg_seq != seq) continue;  // a stale answer to an earlier request
        if (reply->nlmsg_type == NLMSG_ERROR) {
          const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(reply));
          if (message && error->error != 0) *message = extended_ack_text(reply);
          return -error->error;
        }
        if (on_reply) on_reply(reply);
      }
    }
  }

  // Like call, but any error is fatal, described with `what`.
  void must(Request& request, const std::string& what) {
    std::string message;
    if (int err = call(request, &message); err != 0) {
      fail(what + ": " + errno_text(err) + (message.empty() ? "" : " (" + message + ")"));
    }
  }

 private:
  static std::string extended_ack_text(const nlmsghdr* reply) {
    if (!(reply->nlmsg_flags & NLM_F_ACK_TLVS)) return {};
    // With NETLINK_CAP_ACK the error carries only the request's header, then the TLVs.
    size_t offset = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nlmsgerr));
    if (!(reply->nlmsg_flags & NLM_F_CAPPED)) {
      const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(reply));
      offset += NLMSG_ALIGN(error->msg.nlmsg_len) - NLMSG_ALIGN(sizeof(nlmsghdr));
    }
    const char* base = reinterpret_cast<const char*>(reply);
    while (offset + sizeof(nlattr) <= reply->nlmsg_len) {
      const auto* attr = reinterpret_cast<const nlattr*>(base + offset);
      if (attr->nla_len < sizeof(nlattr) || offset + attr->nla_len > reply->nlmsg_len) break;
      if ((attr->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
        const char* text = base + offset + NLA_HDRLEN;
        return std::string(text, strnlen(text, attr->nla_len - NLA_HDRLEN));
      }
      offset += NLA_ALIGN(attr->nla_len);
    }
    return {};
  }

  int fd_ = -1;
  uint32_t seq_ = 0;
};

ifinfomsg link_message(int index = 0, unsigned flags = 0, unsigned change = 0) {
  ifinfomsg info{};
  info.ifi_family = AF_UNSPEC;
  info.ifi_index = index;
  info.ifi_flags = flags;
  info.ifi_change = change;
  return info;
}

// Brings a link up, addressed by name (no index lookup needed).
void set_link_up(Netlink& netlink, const std::string& name) {
  Request request(RTM_NEWLINK, 0);
  request.add_struct(link_message(0, IFF_UP, IFF_UP));
  request.add_string(IFLA_IFNAME, name);
  netlink.must(request, "cannot bring " + name + " up");
}

// The kind of an existing link ("bridge", "veth", "" for none) or nullopt-like "-" if absent.
std::string link_kind(Netlink& netlink, const std::string& name) {
  Request request(RTM_GETLINK, 0);
  request.add_struct(link_message());
  request.add_string(IFLA_IFNAME, name);
  std::string kind;
  int err = netlink.call(request, nullptr, [&](const nlmsghdr* reply) {
    if (reply->nlmsg_type != RTM_NEWLINK) return;
    int length = static_cast<int>(IFLA_PAYLOAD(reply));
    for (auto* attr = IFLA_RTA(static_cast<ifinfomsg*>(NLMSG_DATA(reply))); RTA_OK(attr, length);
         attr = RTA_NEXT(attr, length)) {
      if ((attr->rta_type & NLA_TYPE_MASK) != IFLA_LINKINFO) continue;
      int inner = static_cast<int>(RTA_PAYLOAD(attr));
      for (auto* info = static_cast<rtattr*>(RTA_DATA(attr)); RTA_OK(info, inner);
           info = RTA_NEXT(info, inner)) {
        if ((info->rta_type & NLA_TYPE_MASK) == IFLA_INFO_KIND) {
          const char* text = static_cast<const char*>(RTA_DATA(info));
          kind.assign(text, strnlen(text, RTA_PAYLOAD(info)));
        }
      }
    }
  });
  if (err == ENODEV) return "-";
  if (err != 0) fail("cannot inspect " + name + ": " + errno_text(err));
  return kind;
}

int delete_link(Netlink& netlink, const std::string& name) {
  Request request(RTM_DELLINK, 0);
  request.add_struct(link_message());
  request.add_string(IFLA_IFNAME, name);
  std::string message;
  int err = netlink.call(request, &message);
  if (err == ENODEV) return 0;  // already gone: success
  if (err != 0) {
    fail("cannot delete " + name + ": " + errno_text(err) +
         (message.empty() ? "" : " (" + message + ")"));
  }
  return 0;
}

// Replaces (or adds) an IPv4 address on a link.
void set_address(Netlink& netlink, const std::string& name, uint32_t address_be, int prefix) {
  unsigned index = if_nametoindex(name.c_str());
  if (index == 0) fail("no interface " + name + ": " + errno_text(errno));
  Request request(RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
  ifaddrmsg info{};
  info.ifa_family = AF_INET;
  info.ifa_prefixlen = static_cast<unsigned char>(prefix);
  info.ifa_scope = RT_SCOPE_UNIVERSE;
  info.ifa_index = index;
  request.add_struct(info);
  request.add(IFA_LOCAL, &address_be, sizeof address_be);
  request.add(IFA_ADDRESS, &address_be, sizeof address_be);
  uint32_t host_mask = prefix >= 32 ? 0u : (0xffffffffu >> prefix);
  uint32_t broadcast = htonl(ntohl(address_be) | host_mask);
  request.add(IFA_BROADCAST, &broadcast, sizeof broadcast);
  netlink.must(request, "cannot set the address of " + name);
}

// ---------------------------------------------------------------------------------------------
// Address parsing.

uint32_t parse_ipv4(const std::string& text, const std::string& what) {
  in_addr address{};
  if (inet_pton(AF_INET, text.c_str(), &address) != 1) {
    fail(what + " is not an IPv4 address: '" + text + "'");
  }
  return ntohl(address.s_addr);
}

std::string format_ipv4(uint32_t host_order) {
  in_addr address{htonl(host_order)};
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &address, text, sizeof text);
  return text;
}

struct Subnet {
  uint32_t base = 0;  // host byte order
  int prefix = 0;
  uint64_t size() const { return uint64_t{1} << (32 - prefix); }
};

Subnet parse_subnet(const std::string& text) {
  auto slash = text.find('/');
  if (slash == std::string::npos) fail("subnet must be written address/prefix: '" + text + "'");
  Subnet subnet;
  subnet.base = parse_ipv4(text.substr(0, slash), "subnet");
  const std::string prefix = text.substr(slash + 1);
  if (prefix.empty() || prefix.size() > 2 ||
      prefix.find_first_not_of("0123456789") != std::string::npos) {
    fail("bad subnet prefix length: '" + text + "'");
  }
  subnet.prefix = std::stoi(prefix);
  // A bridge address, a broadcast address and at least two sandboxes need /29 at the smallest.
  if (subnet.prefix < 8 || subnet.prefix > 29) {
    fail("subnet prefix length must be between 8 and 29: '" + text + "'");
  }
  if (subnet.base & static_cast<uint32_t>(subnet.size() - 1)) {
    fail("subnet address has host bits set: '" + text + "'");
  }
  return subnet;
}

void check_interface_name(const std::string& name, const std::string& what) {
  if (name.empty() || name.size() >= IFNAMSIZ) {
    fail(what + " must be 1 to " + std::to_string(IFNAMSIZ - 1) + " characters: '" + name + "'");
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if (!ok) fail(what + " may only use letters, digits, '-', '_' and '.': '" + name + "'");
  }
}

// ---------------------------------------------------------------------------------------------
// The iptables binary (ensure/teardown only: once per shim start).

struct CommandResult {
  int status = -1;  // exit code, or -1 if it did not exit normally
  std::string output;
};

std::string find_program(const std::string& name) {
  // The shim may run with a PATH without the sbin directories.
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    std::string path = std::string(dir) + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  fail(name + " was not found (install the iptables package)");
}

CommandResult run(const std::string& program, const std::vector<std::string>& args,
                  const std::string& input = {}) {
  const std::string path = find_program(program);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) fail("pipe: " + errno_text(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    fail("pipe: " + errno_text(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int err = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (err != 0) {
    close(in[1]);
    close(out[0]);
    fail("cannot run " + program + ": " + errno_text(err));
  }
  // Inputs are a few hundred bytes, far below a pipe's capacity: write all, then read all.
  for (size_t done = 0; done < input.size();) {
    ssize_t n = write(in[1], input.data() + done, input.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(in[1]);
  CommandResult result;
  char buffer[4096];
  for (;;) {
    ssize_t n = read(out[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

CommandResult iptables(const std::vector<std::string>& args) {
  std::vector<std::string> full{"-w"};
  full.insert(full.end(), args.begin(), args.end());
  return run("iptables", full);
}

bool rule_exists(const std::string& table, const std::string& chain, const std::string& target) {
  return iptables({"-t", table, "-C", chain, "-j", target}).status == 0;
}

bool chain_exists(const std::string& table, const std::string& chain) {
  return iptables({"-t", table, "-S", chain}).status == 0;
}


void write_sysctl(const std::string& path, const std::string& value, bool missing_ok) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    if (missing_ok && errno == ENOENT) return;
    fail("cannot open sysctl " + path + ": " + errno_text(errno));
  }
  ssize_t n = write(fd, value.data(), value.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) fail("cannot write sysctl " + path + ": " + errno_text(err));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

HostNetwork::HostNetwork(NetworkConfig config) : config_(std::move(config)) {
  // Validate now so a bad configuration fails at startup with a clear message.
  check_interface_name(config_.bridge, "bridge name");
  parse_subnet(config_.subnet);
}

int HostNetwork::prefix_length() const { return parse_subnet(config_.subnet).prefix; }

std::string HostNetwork::gateway() const { return format_ipv4(parse_subnet(config_.subnet).base + 1); }

std::string HostNetwork::address_for_slot(int64_t slot) const {
  const Subnet subnet = parse_subnet(config_.subnet);
  // .0 is the network, .1 the bridge, the last address the broadcast.
  const int64_t slots = static_cast<int64_t>(subnet.size()) - 3;
  if (slot < 0 || slot >= slots) {
    fail("slot " + std::to_string(slot) + " is outside the " + std::to_string(slots) +
         " sandbox addresses of " + config_.subnet);
  }
  return format_ipv4(subnet.base + 2 + static_cast<uint32_t>(slot));
}

std::string HostNetwork::host_interface(int64_t slot) const {
  if (slot < 0) fail("negative slot " + std::to_string(slot));
  // FNV-1a of the bridge name: stable across restarts, distinct for distinct bridges in practice.
  uint32_t hash = 2166136261u;
  for (unsigned char c : config_.bridge) hash = (hash ^ c) * 16777619u;
  char tag[8];
  std::snprintf(tag, sizeof tag, "%04x", static_cast<unsigned>(hash & 0xffff));
  return "cv" + std::string(tag) + std::to_string(slot);  // 2 + 4 + at most 8 digits (/8)
}

std::vector<HostNetwork::Hook> HostNetwork::hooks() const {
  return {{"filter", "INPUT", input_chain()}, {"filter", "FORWARD", forward_chain()}, {"nat", "POSTROUTING", nat_chain()}};
}

void HostNetwork::ensure() {
  const Subnet subnet = parse_subnet(config_.subnet);
  const std::string& bridge = config_.bridge;
  Netlink netlink;

  // 1. The bridge, with a fixed random MAC (otherwise it takes the lowest port MAC and changes
  //    whenever sandboxes come and go, which stales every sandbox's ARP entry for the gateway).
  const std::string kind = link_kind(netlink, bridge);
  if (kind == "-") {
    unsigned char mac[6];
    if (getrandom(mac, sizeof mac, 0) != static_cast<ssize_t>(sizeof mac)) {
      fail("getrandom: " + errno_text(errno));
    }
    mac[0] = static_cast<unsigned char>((mac[0] & 0xfe) | 0x02);  // unicast, locally administered
    Request request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    request.add_struct(link_message());
    request.add_string(IFLA_IFNAME, bridge);
    request.add(IFLA_ADDRESS, mac, sizeof mac);
    size_t info = request.begin_nest(IFLA_LINKINFO);
    request.add_string(IFLA_INFO_KIND, "bridge");
    request.end_nest(info);
    netlink.must(request, "cannot create bridge " + bridge);
  } else if (kind != "bridge") {
    fail("interface " + bridge + " exists and is not a bridge");
  }
  // No IPv6 on the bridge: otherwise its link-local address would reach the host's dual-stack
  // listeners (iptables rules here are IPv4 only), and IPv6 packets arriving on it are dropped.
  write_sysctl("/proc/sys/net/ipv6/conf/" + bridge + "/disable_ipv6", "1", true);
  set_address(netlink, bridge, htonl(subnet.base + 1), subnet.prefix);
  set_link_up(netlink, bridge);

  // 2. Routing between the bridge and the uplink.
  write_sysctl("/proc/sys/net/ipv4/ip_forward", "1", false);

  // 3. Our chains, filled atomically by one iptables-restore per table (--noflush leaves every
  //    other chain alone; declaring our chains empties only them), hooked once at the top.
  const std::string in = input_chain(), fwd = forward_chain(), nat = nat_chain();
  std::string rules = "*filter\n:" + in + " - [0:0]\n:" + fwd + " - [0:0]\n";
  // Sandboxes reach none of the host's addresses: INPUT sees every local destination.
  rules += "-A " + in + " -i " + bridge + " -j DROP\n";
  // Sandbox to sandbox, if routed through the host (the bridge ports are isolated already).
  rules += "-A " + fwd + " -i " + bridge + " -o " + bridge + " -j DROP\n";
  rules += "-A " + fwd + " -i " + bridge + " -j ACCEPT\n";
  rules += "-A " + fwd + " -o " + bridge + " -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n";
  // Nothing outside opens connections into sandboxes (the shim uses the host channel).
  rules += "-A " + fwd + " -o " + bridge + " -j DROP\n";
  for (const auto& hook : hooks()) {
    if (hook.table == "filter" && !rule_exists(hook.table, hook.builtin, hook.ours)) {
      rules += "-I " + hook.builtin + " 1 -j " + hook.ours + "\n";
    }
  }
  rules += "COMMIT\n*nat\n:" + nat + " - [0:0]\n";
  rules += "-A " + nat + " -s " + format_ipv4(subnet.base) + "/" + std::to_string(subnet.prefix) + " ! -o " + bridge +
           " -j MASQUERADE\n";
  for (const auto& hook : hooks()) {
    if (hook.table == "nat" && !rule_exists(hook.table, hook.builtin, hook.ours)) {
      rules += "-I " + hook.builtin + " 1 -j " + hook.ours + "\n";
    }
  }
  rules += "COMMIT\n";
  CommandResult restored = run("iptables-restore", {"-w", "--noflush"}, rules);
  if (restored.status != 0) {
    fail("iptables-restore failed (exit " + std::to_string(restored.status) +
         "): " + trimmed(restored.output));
  }
}

void HostNetwork::teardown() {
  for (const auto& hook : hooks()) {
    // Unhook every copy of our jump (an older, non-idempotent run could have left several).
    for (int i = 0; i < 32 && rule_exists(hook.table, hook.builtin, hook.ours); ++i) {
      CommandResult removed = iptables({"-t", hook.table, "-D", hook.builtin, "-j", hook.ours});
      if (removed.status != 0) {
        fail("cannot unhook " + hook.ours + ": " + trimmed(removed.output));
      }
    }
    if (!chain_exists(hook.table, hook.ours)) continue;
    for (const char* op : {"-F", "-X"}) {
      CommandResult done = iptables({"-t", hook.table, op, hook.ours});
      if (done.status != 0) {
        fail("cannot remove chain " + hook.ours + ": " + trimmed(done.output));
      }
    }
  }
  Netlink netlink;
  const std::string kind = link_kind(netlink, config_.bridge);
  if (kind == "-") return;
  if (kind != "bridge") fail("interface " + config_.bridge + " is not a bridge; left alone");
  delete_link(netlink, config_.bridge);
}

void HostNetwork::attach(int64_t slot, pid_t pid) const {
  address_for_slot(slot);  // the slot must have an address; throws otherwise
  if (pid <= 0) fail("attach needs a sandbox process id, got " + std::to_string(pid));
  const std::string host = host_interface(slot);
  check_interface_name(host, "host interface name");
  const unsigned bridge_index = if_nametoindex(config_.bridge.c_str());
  if (bridge_index == 0) fail("bridge " + config_.bridge + " does not exist (ensure() first)");

  Netlink netlink;
  {
    // The pair, its host end already a (still down) port of the bridge, its peer created
    // directly inside the sandbox's network namespace as eth0.
    Request request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    request.add_struct(link_message());
    request.add_string(IFLA_IFNAME, host);
    request.add_u32(IFLA_MASTER, bridge_index);
    size_t info = request.begin_nest(IFLA_LINKINFO);
    request.add_string(IFLA_INFO_KIND, "veth");
    size_t data = request.begin_nest(IFLA_INFO_DATA);
    size_t peer = request.begin_nest(VETH_INFO_PEER);
    request.add_struct(link_message());
    request.add_string(IFLA_IFNAME, "eth0");
    request.add_u32(IFLA_NET_NS_PID, static_cast<uint32_t>(pid));
    request.end_nest(peer);
    request.end_nest(data);
    request.end_nest(info);
    netlink.must(request, "cannot create " + host + " for sandbox process " + std::to_string(pid));
  }
  {
    // Isolated port (isolated ports only talk to non-isolated ones: the bridge itself and any
    // uplink), then up. Isolation goes first so the port never forwards unisolated.
    Request request(RTM_NEWLINK, 0);
    request.add_struct(link_message(0, IFF_UP, IFF_UP));
    request.add_string(IFLA_IFNAME, host);
    size_t info = request.begin_nest(IFLA_LINKINFO);
    size_t slave = request.begin_nest(IFLA_INFO_SLAVE_DATA);
    request.add_u8(IFLA_BRPORT_ISOLATED, 1);
    request.end_nest(slave);
    request.end_nest(info);
    std::string message;
    if (int err = netlink.call(request, &message); err != 0) {
      delete_link(netlink, host);  // never leave a non-isolated port behind
      fail("cannot isolate and bring up " + host + ": " + errno_text(err) +
           (message.empty() ? "" : " (" + message + ")"));
    }
  }
}

void HostNetwork::detach(int64_t slot) const {
  Netlink netlink;
  delete_link(netlink, host_interface(slot));
}

void configure_sandbox_interfaces(const std::string& address, int prefix_length,
                                  const std::string& gateway) {
  Netlink netlink;
  set_link_up(netlink, "lo");
  if (address.empty()) return;
  if (prefix_length < 1 || prefix_length > 30) {
    fail("prefix length must be between 1 and 30, got " + std::to_string(prefix_length));
  }
  const uint32_t local = parse_ipv4(address, "sandbox address");
  const uint32_t via = parse_ipv4(gateway, "gateway");
  const uint32_t mask = 0xffffffffu << (32 - prefix_length);
  if ((local & mask) != (via & mask)) fail("gateway " + gateway + " is not on the sandbox's subnet");

  set_address(netlink, "eth0", htonl(local), prefix_length);
  set_link_up(netlink, "eth0");  // before the route: a gateway on a down link is unreachable

  const unsigned index = if_nametoindex("eth0");
  if (index == 0) fail("no interface eth0: " + errno_text(errno));
  Request request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
  rtmsg route{};
  route.rtm_family = AF_INET;
  route.rtm_dst_len = 0;  // default route
  route.rtm_table = RT_TABLE_MAIN;
  route.rtm_protocol = RTPROT_BOOT;
  route.rtm_scope = RT_SCOPE_UNIVERSE;
  route.rtm_type = RTN_UNICAST;
  request.add_struct(route);
  const uint32_t via_be = htonl(via);
  request.add(RTA_GATEWAY, &via_be, sizeof via_be);
  request.add_u32(RTA_OIF, index);
  netlink.must(request, "cannot add the default route via " + gateway);
}

}  // namespace cove::shim::container
