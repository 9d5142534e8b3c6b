#pragma once
// `fromImage`: pulls an OCI/Docker image from a registry into the layer store. Each layer blob
// becomes one content-addressed layer directory (keyed by its digest, so a second pull of any image
// sharing it downloads nothing); the result is the lowers to stack and what the image config says.
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "rootfs-builder/build_plan.hpp"
#include "rootfs-builder/layer_store.hpp"
#include "rootfs-builder/oci_manifest.hpp"
#include "rootfs-builder/registry_client.hpp"

namespace cove::builder {

// Everything pull_image throws is a PullError whose message is fit for the client (no
// credentials, no host paths).
struct PullError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PulledImage {
  std::vector<std::string> layers;  // LayerStore paths, uppermost first (overlay lowerdir order)
  ImageConfig config;
  std::string manifest_digest;      // the linux/amd64 image manifest's digest (after any index)
  std::string reference;            // normalised: "registry-1.docker.io/library/python:3.12"
};

inline constexpr uint64_t kMaxManifestBytes = 4 << 20;
inline constexpr uint64_t kMaxConfigBytes = 4 << 20;

// Blocking. `log` gets one line per event ("Pulling …", "Layer sha256:… cached" / "… 12.3 MiB").
PulledImage pull_image(const std::string& reference, const std::optional<RegistryCredentials>& credentials,
                       const LayerStore& layers, const RegistryOptions& options,
                       const std::function<void(const std::string&)>& log);

}  // namespace cove::builder
