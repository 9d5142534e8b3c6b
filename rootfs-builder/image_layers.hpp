#pragma once
// Image layer blobs as overlayfs lowers: a layer unpacks into its own directory with the archived
// owners, modes and file capabilities, and OCI whiteouts become overlayfs ones (`.wh.<name>` → a
// 0/0 character device `<name>`, `.wh..wh..opq` → trusted.overlay.opaque=y on the directory), so
// stacking the layers' directories as lowers (uppermost first) is the image's root filesystem.
#include <cstddef>
#include <string>

namespace cove::builder {

// The LayerStore key of the layer blob `digest`: 64 hex of sha256("oci-layer\n" + digest), so the
// store's garbage collection treats it as a content-addressed layer.
std::string oci_layer_key(const std::string& digest);

struct UnpackedLayer {
  size_t whiteouts = 0;        // overlay whiteouts created
  size_t opaque_dirs = 0;      // directories marked opaque
  size_t skipped_devices = 0;  // char/block device members (a sandbox gets its own /dev)
};

// Unpacks the tar or tar.gz blob at `blob_path` into the directory `dest_dir_fd` (which should be
// empty). Needs root (owners, mknod, trusted.* xattrs). Refuses zstd blobs and hostile members
// with TarError; what was unpacked before a failure stays (the caller discards the directory).
UnpackedLayer unpack_image_layer(const std::string& blob_path, int dest_dir_fd);

}  // namespace cove::builder
