#pragma once
// User metadata on uploaded files: `X-Metadata-<Key>: v` request headers stored as the xattrs
// `user.e2b.<lowercase key>` (envd.md §3). Every upload replaces the whole set.
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cove::files {

using Metadata = std::map<std::string, std::string>;

inline constexpr std::string_view kMetadataXattrPrefix = "user.e2b.";
inline constexpr size_t kMaxMetadataKeyLength = 255 - kMetadataXattrPrefix.size();  // 246
inline constexpr size_t kMaxMetadataTotalLength = 4096;

// Request headers (name, value) in arrival order -> metadata. Names match "X-Metadata-"
// case-insensitively; keys are lower-cased; the first value of a repeated key wins; an empty
// key is dropped.
Metadata metadata_from_headers(const std::vector<std::pair<std::string_view, std::string_view>>& headers);

// "" when valid, else the reason (envd prefixes it with "invalid metadata: "). Keys and values
// printable ASCII 0x20-0x7E, keys non-empty and at most 246 bytes, and
// sum(len("user.e2b.") + len(k) + len(v)) <= 4096. Keys are checked in sorted order.
std::string validate_metadata(const Metadata& metadata);

// Replaces the user.e2b.* xattrs of an open file with `metadata`. Returns 0, or the errno of the
// failing call with `error` describing it. A filesystem without xattr support (ENOTSUP) counts
// as success: there is nothing to replace.
int replace_metadata(int fd, const Metadata& metadata, std::string& error);

// The user.e2b.* xattrs with the prefix stripped; entries that are not valid UTF-8 are skipped,
// and a filesystem without xattrs gives an empty map.
Metadata read_metadata(int fd);
Metadata read_metadata(const std::string& path);

}  // namespace cove::files
