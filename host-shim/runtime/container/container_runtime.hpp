#pragma once
// The container backend of Runtime: each sandbox is the agent as PID 1 of its own user, pid,
// mount, network, uts, ipc and cgroup namespaces, on an overlay of the template's read-only
// layers (idmapped to the sandbox's uid range) over a per-sandbox ext4 disk image, with cgroup
// limits. The namespace work happens in cove-sandbox-init (a static launcher spawned per start);
// this class prepares host state, reads the launcher's report and owns the instance afterwards.
//
// Host layout under state_dir:
//   images/empty-<size>m.ext4          empty filesystems, one per disk size (made once)
//   sandboxes/<id>/                    0700 root
//     instance.json  disk.img  agent.log (the agent's stdout/stderr, owned by the sandbox's root)
//     restore.log  restored.pid          CRIU's log and report of the last restore
// A stopped or checkpointed sandbox keeps its dir with pid 0 in its record: it is not running
// (connect, stats, recover say so) until start() with disk_source = kKeepDisk.
//     l<i>/ disk/ rootfs/              mount points, used only in private namespaces
// The host channel is the agent's socket /run/cove/agent.sock inside the sandbox, reached as
// /proc/<init pid>/root/run/cove/agent.sock while the init's pidfd says it is alive (a bind of a
// host dir instead would reveal its host path in the sandbox's mountinfo).
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/container/cgroups.hpp"
#include "runtime/container/checkpoint_images.hpp"
#include "runtime/container/disk_image.hpp"
#include "runtime/container/instance.hpp"
#include "runtime/container/network.hpp"
#include "runtime/runtime.hpp"

namespace cove::shim::container {

struct ContainerRuntimeOptions {
  std::string state_dir;
  std::string init_path;  // cove-sandbox-init; empty: next to the running executable
  NetworkConfig network;
  std::chrono::milliseconds start_timeout{10000};
  std::chrono::milliseconds kill_timeout{5000};
  // CRIU as tools/criu.sh builds it. Missing: checkpoint() and restores throw, the rest works.
  std::string criu_path = "/var/cache/cove/criu/4.2.1/criu";
  std::chrono::milliseconds freeze_timeout{2000};
  std::chrono::milliseconds checkpoint_timeout{60000};  // one CRIU dump or restore
};

class ContainerRuntime final : public Runtime {
 public:
  // Throws RuntimeError if the state dir cannot be made or no usable cgroup layout exists.
  // HostNetwork::ensure() is the caller's business (before starting sandboxes with internet).
  ContainerRuntime(net::any_io_executor executor, ContainerRuntimeOptions options, HostNetwork& network);
  ~ContainerRuntime() override;

  void start(const SandboxSpec& spec) override;
  net::awaitable<Socket> connect(const std::string& id, uint16_t port) override;
  void destroy(const std::string& id) override;
  bool recover(const std::string& id) override;
  std::vector<std::string> instances() override;
  std::optional<SandboxStats> stats(const std::string& id) override;
  void on_exit(std::function<void(const std::string& id)> callback) override;
  void freeze(const std::string& id) override;
  void thaw(const std::string& id) override;
  void checkpoint(const std::string& id, const CheckpointRequest& request) override;
  void stop(const std::string& id) override;
  void export_disk(const std::string& id, const std::string& path) override;

  // Valid sandbox ids: [A-Za-z0-9][A-Za-z0-9_-]{0,62} (they become hostnames and path names).
  static bool valid_id(const std::string& id);

 private:
  struct Watch;
  struct ExitCallback;
  struct Instance {
    InstanceRecord record;
    int pidfd = -1;                 // of the sandbox init
    std::shared_ptr<Watch> watch;   // its exit watch on the executor
  };

  std::string sandbox_dir(const std::string& id) const;
  int live_pidfd(const std::string& id, pid_t& pid);  // a dup, or -1
  void launch(const SandboxSpec& spec, InstanceRecord& record, const CheckpointInfo* checkpoint);
  void cleanup(const std::string& id, const std::optional<InstanceRecord>& record, int pidfd);
  // Ends every process and releases cgroups, network and the disk's loop device; the sandbox
  // dir (disk.img, instance record) stays.
  void teardown(const std::string& id, const std::optional<InstanceRecord>& record, int pidfd);
  void adopt(InstanceRecord record, int pidfd);
  // Takes a running instance out of the map (its exit watch cancelled): for stop and checkpoint.
  std::unique_ptr<Instance> take(const std::string& id);
  // The record of a live instance (throws RuntimeError "not running" otherwise).
  InstanceRecord running_record(const std::string& id);
  // eth0 for the slot, in the network namespace of `pid` (a restore, or after a dump).
  void attach_network(const InstanceRecord& record);
  bool criu_available() const;

  net::any_io_executor executor_;
  ContainerRuntimeOptions options_;
  HostNetwork& network_;
  CgroupLayout cgroup_layout_;
  DiskImageCache images_;

  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Instance>> instances_;
  std::shared_ptr<ExitCallback> exit_callback_;  // shared with pending watches
};

}  // namespace cove::shim::container
