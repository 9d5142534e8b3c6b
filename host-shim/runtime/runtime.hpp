#pragma once
// The sandbox backend seam: containers today (runtime/container), Firecracker microVMs later.
// The lifecycle calls it; it knows nothing of HTTP, the store or E2B. Blocking calls (start,
// destroy, …) run on the lifecycle's worker threads; connect() is asynchronous because it sits
// in the data path. Every call is keyed by sandbox id; a backend keeps whatever it needs to find
// an instance again (after a shim restart) under its own state directory.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cove::shim {

namespace net = boost::asio;
using Socket = net::generic::stream_protocol::socket;

struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A checkpoint failed only because something outside still held a connection into the sandbox
// (one that raced the agent's quiesce): quiescing again and retrying can succeed.
struct CheckpointBusyError : RuntimeError {
  using RuntimeError::RuntimeError;
};

struct SandboxSpec {
  std::string id;                   // also the hostname
  int64_t slot = 0;                 // node-unique index: uid/gid range, network address, names
  std::vector<std::string> layers;  // read-only root filesystem layers, uppermost first
  int cpu_count = 2;
  int memory_mb = 512;
  int disk_size_mb = 2048;
  int pids_max = 4096;
  bool allow_internet_access = true;
  uint16_t agent_port = 49983;      // the agent's own port (HTTP after the handshake)
  // Template builds: an empty host directory that becomes the sandbox's writable layer instead of
  // a private disk. destroy() leaves it behind holding the sandbox's changes as an overlay upper
  // layer in `<changes_dir>/upper` (whiteouts, opaque dirs), owned by the ids seen inside the
  // sandbox: ready to be stacked as a read-only layer. The disk size is not enforced then.
  std::string changes_dir;
  // Where the writable disk comes from: empty → a fresh empty one; a file → a copy of that disk
  // image (a snapshot's); kKeepDisk → the disk this sandbox id already has on this host (resuming
  // a stopped or checkpointed sandbox).
  std::string disk_source;
  // Non-empty: start from this checkpoint (written by checkpoint()) instead of booting the agent;
  // the processes come back with their pids, memory, open files and sockets.
  std::string checkpoint_dir;
};

inline constexpr std::string_view kKeepDisk = "keep";

struct CheckpointRequest {
  std::string dir;             // an empty directory that receives the images
  bool leave_running = false;  // snapshots: the sandbox goes on (thawed) after the dump
};

struct SandboxStats {
  int cpu_count = 0;
  uint64_t cpu_usage_ns = 0;        // cumulative CPU time of everything in the sandbox
  uint64_t memory_used = 0;         // bytes
  uint64_t memory_total = 0;        // bytes (the limit)
  uint64_t disk_used = 0;           // bytes
  uint64_t disk_total = 0;          // bytes
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // Builds and starts the sandbox; returns once its agent process runs (it may not listen yet:
  // the caller polls with connect()). Throws RuntimeError, having cleaned up after itself.
  virtual void start(const SandboxSpec& spec) = 0;

  // A byte stream to `port` inside the sandbox, handshake done: for the agent's port the agent
  // serves HTTP on it, for any other port the bytes go to that port on the sandbox's loopback.
  // Throws boost::system::system_error: errc::connection_refused if nothing listens there,
  // errc::no_such_process if the sandbox is not running.
  virtual net::awaitable<Socket> connect(const std::string& id, uint16_t port) = 0;

  // Kills everything in the sandbox and removes every trace of it on the host (processes, mounts,
  // disk, cgroups, network, uid range). Idempotent; works for half-created and dead instances.
  virtual void destroy(const std::string& id) = 0;

  // Reattaches to an instance that survived a shim restart; false if it is not running.
  virtual bool recover(const std::string& id) = 0;
  // Ids of every instance with state on this host (running or not), for orphan cleanup.
  virtual std::vector<std::string> instances() = 0;

  virtual std::optional<SandboxStats> stats(const std::string& id) = 0;

  // Called (on the executor given to the backend) when a sandbox's init process exits by itself.
  virtual void on_exit(std::function<void(const std::string& id)> callback) = 0;

  // Warm pause: every process of the sandbox stops where it is; memory stays resident. Both are
  // idempotent. Throws RuntimeError (no_such_process semantics: not running).
  virtual void freeze(const std::string& id) = 0;
  virtual void thaw(const std::string& id) = 0;

  // Writes the (frozen) sandbox's processes and memory to request.dir. Unless leave_running, the
  // processes are gone afterwards but the instance (its disk, its slot) stays until destroy(),
  // and start() with checkpoint_dir + kKeepDisk brings it back. With leave_running the sandbox is
  // left as it was found (frozen stays frozen). Throws RuntimeError with a client-safe message
  // naming what cannot be checkpointed.
  virtual void checkpoint(const std::string& id, const CheckpointRequest& request) = 0;

  // Ends every process but keeps the instance's disk (filesystem-only pause); start() with
  // kKeepDisk boots over it again. Idempotent.
  virtual void stop(const std::string& id) = 0;

  // Copies the sandbox's writable disk, consistent as of now (the sandbox must be frozen or
  // stopped), to `path` (sparse). Snapshots keep it next to their checkpoint.
  virtual void export_disk(const std::string& id, const std::string& path) = 0;
};

}  // namespace cove::shim
