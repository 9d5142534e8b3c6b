#pragma once
// OCI and Docker (schema 2) manifests, indexes / manifest lists and image configs: parsing with
// every field the pull relies on checked, the linux/amd64 pick from an index, and the layer
// compression a media type announces. Registry JSON is untrusted input.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cove::builder {

struct ManifestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace media_type {
inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kDockerList = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kDockerConfig = "application/vnd.docker.container.image.v1+json";
}  // namespace media_type

// The Accept header of manifest requests: all four kinds, nothing else (no schema 1).
std::string manifest_accept_header();

struct Platform {
  std::string os, architecture, variant;
};

struct Descriptor {
  std::string media_type;
  std::string digest;  // checked: sha256:<64 hex>
  uint64_t size = 0;
  std::optional<Platform> platform;  // index entries
};

struct Manifest {
  enum class Kind { index, image } kind = Kind::image;
  std::string media_type;
  std::vector<Descriptor> manifests;  // index
  Descriptor config;                  // image
  std::vector<Descriptor> layers;     // image, lowest first as in the manifest
};

// `content_type` is the response's Content-Type (parameters allowed); the body's own mediaType
// wins when present and must agree with a manifest Content-Type. Throws ManifestError.
Manifest parse_manifest(std::string_view body, std::string_view content_type);

// The index entry for os/architecture: one without a variant first, else the first match.
// Throws ManifestError naming the platforms the index has.
const Descriptor& select_platform(const Manifest& index, const std::string& os = "linux",
                                  const std::string& architecture = "amd64");

enum class LayerCompression { none, gzip, zstd };
// Throws ManifestError for media types that are not image layers.
LayerCompression layer_compression(const std::string& media_type);

// What a sandbox takes from the image's config blob.
struct ImageConfig {
  std::vector<std::pair<std::string, std::string>> env;  // Env, "KEY=VALUE" split at the first '='
  std::string workdir;                                   // WorkingDir
  std::string user;                                      // User
  std::vector<std::string> entrypoint, cmd;              // Entrypoint, Cmd
};

// The config blob (OCI or Docker: same JSON). Throws ManifestError.
ImageConfig parse_image_config(std::string_view body);

}  // namespace cove::builder
