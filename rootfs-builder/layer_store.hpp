#pragma once
// Content-addressed read-only layers on the host: `<root>/<key>/` is a root-filesystem tree (an
// overlay lower, owned by the ids seen inside a sandbox) named by the hash of what made it, so two
// templates that share a base and steps share the directories. Layers appear by an atomic rename
// of a finished staging dir and are never modified after that.
#include <cstdint>
#include <set>
#include <string>

namespace cove::builder {

class LayerStore {
 public:
  explicit LayerStore(std::string root);  // created (0700) if missing

  const std::string& root() const { return root_; }
  std::string path(const std::string& key) const;
  bool has(const std::string& key) const;
  // A new empty directory under the root (same filesystem, so publishing is a rename).
  std::string make_staging() const;
  // Publishes `tree` (a dir on the root's filesystem) as `key` and returns path(key). When the key
  // exists already (another build made it meanwhile), `tree` is removed and the existing one wins.
  std::string publish(const std::string& tree, const std::string& key) const;
  void discard(const std::string& dir) const;
  // Staging dirs of builds that a crash or restart interrupted.
  void remove_staging_leftovers() const;
  // Removes content-addressed layers whose path is not in `keep`; returns how many went.
  size_t collect_garbage(const std::set<std::string>& keep) const;
  // Bytes used by a layer's files (for benchmarks and listings).
  uint64_t disk_usage(const std::string& key) const;

 private:
  std::string root_;
};

}  // namespace cove::builder
