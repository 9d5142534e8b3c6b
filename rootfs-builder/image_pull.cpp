#include "rootfs-builder/image_pull.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <set>
#include <system_error>

#include "rootfs-builder/content_digest.hpp"
#include "rootfs-builder/image_layers.hpp"
#include "rootfs-builder/image_reference.hpp"
#include "rootfs-builder/tar_reader.hpp"
#include "rootfs-builder/unique_fd.hpp"

namespace cove::builder {
namespace {

std::string short_digest(const std::string& digest) { return digest.substr(0, 7 + 12); }

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// Removes staging dirs unless released: a failed pull leaves nothing behind in the store.
class Staging {
 public:
  explicit Staging(const LayerStore& store) : store_(store), dir_(store.make_staging()) {}
  ~Staging() {
    if (!dir_.empty()) store_.discard(dir_);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  const std::string& dir() const { return dir_; }
  std::string release() { return std::exchange(dir_, std::string()); }

 private:
  const LayerStore& store_;
  std::string dir_;
};

// Fetches a manifest and checks it against the digest that named it (when one did).
RegistryClient::Manifest fetch_manifest(RegistryClient& client, const std::string& reference,
                                        const std::string& expected_digest, std::optional<uint64_t> expected_size,
                                        std::string& digest) {
  auto m = client.get_manifest(reference, kMaxManifestBytes);
  digest = sha256_digest_of(m.body);
  if (!expected_digest.empty() && digest != expected_digest) {
    throw PullError("manifest digest mismatch: asked for " + short_digest(expected_digest) + ", got " + short_digest(digest));
  }
  if (expected_size && m.body.size() != *expected_size) throw PullError("manifest size does not match its descriptor");
  return m;
}

std::string download_layer(RegistryClient& client, const Descriptor& layer, const LayerStore& store) {
  Staging blob_dir(store);
  const std::string blob = blob_dir.dir() + "/blob";
  {
    UniqueFd out(::open(blob.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (out.get() < 0) throw std::system_error(errno, std::generic_category(), "create a layer download file");
    Sha256Digest digest;
    client.get_blob(layer.digest, layer.size, [&](const char* data, size_t n) {
      digest.update(data, n);
      while (n > 0) {
        const ssize_t w = ::write(out.get(), data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) throw std::system_error(errno, std::generic_category(), "write a layer download");
        data += w;
        n -= static_cast<size_t>(w);
      }
    });
    const std::string got = digest.finish();
    if (got != layer.digest) {
      throw PullError("layer digest mismatch: asked for " + short_digest(layer.digest) + ", got " + short_digest(got));
    }
  }
  Staging tree(store);
  {
    UniqueFd dir(::open(tree.dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0) throw std::system_error(errno, std::generic_category(), "open a layer staging dir");
    try {
      unpack_image_layer(blob, dir.get());
    } catch (const TarError& e) {
      throw PullError("layer " + short_digest(layer.digest) + ": " + e.what());
    }
  }
  return store.publish(tree.release(), oci_layer_key(layer.digest));
}

PulledImage pull(const std::string& text, const std::optional<RegistryCredentials>& credentials,
                 const LayerStore& store, const RegistryOptions& options,
                 const std::function<void(const std::string&)>& log) {
  const ImageReference ref = parse_image_reference(text);
  log("Pulling " + ref.str());
  RegistryClient client(ref, credentials, options);

  std::string digest;
  auto raw = fetch_manifest(client, ref.manifest_reference(), ref.digest, std::nullopt, digest);
  Manifest manifest = parse_manifest(raw.body, raw.content_type);
  if (manifest.kind == Manifest::Kind::index) {
    const Descriptor& pick = select_platform(manifest);
    if (pick.size > kMaxManifestBytes) throw PullError("the image manifest is larger than 4 MiB");
    raw = fetch_manifest(client, pick.digest, pick.digest, pick.size, digest);
    manifest = parse_manifest(raw.body, raw.content_type);
    if (manifest.kind != Manifest::Kind::image) throw PullError("the linux/amd64 entry of the index is not an image manifest");
  }

  // Every check that needs no download comes first.
  if (manifest.config.size > kMaxConfigBytes) throw PullError("the image config is larger than 4 MiB");
  if (manifest.layers.empty()) throw PullError("the image has no layers");
  for (const auto& layer : manifest.layers) {
    if (layer_compression(layer.media_type) == LayerCompression::zstd) {
      throw PullError("layer " + short_digest(layer.digest) + " is zstd-compressed, which is not supported; push it with gzip");
    }
  }

  std::string config_body;
  client.get_blob(manifest.config.digest, manifest.config.size, [&](const char* d, size_t n) { config_body.append(d, n); });
  if (sha256_digest_of(config_body) != manifest.config.digest) throw PullError("image config digest mismatch");

  PulledImage image;
  image.config = parse_image_config(config_body);
  image.manifest_digest = digest;
  image.reference = ref.str();

  std::vector<std::string> lowest_first;
  for (const auto& layer : manifest.layers) {
    const std::string key = oci_layer_key(layer.digest);
    if (store.has(key)) {
      log("Layer " + short_digest(layer.digest) + " cached");
      lowest_first.push_back(store.path(key));
      continue;
    }
    lowest_first.push_back(download_layer(client, layer, store));
    log("Layer " + short_digest(layer.digest) + " " + mib(layer.size));
  }
  // A layer listed twice shows the same content higher up: only its uppermost copy matters, and
  // overlayfs is spared a repeated lowerdir.
  std::set<std::string> seen;
  for (auto it = lowest_first.rbegin(); it != lowest_first.rend(); ++it) {
    if (seen.insert(*it).second) image.layers.push_back(*it);
  }
  log("Pulled " + ref.str() + " (" + short_digest(digest) + ", " + std::to_string(image.layers.size()) + " layers)");
  return image;
}

}  // namespace

PulledImage pull_image(const std::string& reference, const std::optional<RegistryCredentials>& credentials,
                       const LayerStore& layers, const RegistryOptions& options,
                       const std::function<void(const std::string&)>& log) {
  const auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  try {
    return pull(reference, credentials, layers, options, say);
  } catch (const PullError&) {
    throw;
  } catch (const std::system_error& e) {
    // Store errors: the action and errno text, never a path.
    throw PullError(std::string("image pull failed: ") + e.what());
  } catch (const std::exception& e) {
    // Reference, registry, manifest and tar errors carry client-safe messages already.
    throw PullError(e.what());
  }
}

}  // namespace cove::builder
