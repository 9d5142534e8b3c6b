#include "rootfs-builder/oci_manifest.hpp"

#include <nlohmann/json.hpp>

#include "rootfs-builder/content_digest.hpp"

namespace cove::builder {
namespace {

using nlohmann::json;

std::string_view strip_parameters(std::string_view content_type) {
  const size_t semi = content_type.find(';');
  std::string_view t = content_type.substr(0, semi);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  return t;
}

bool is_index_type(std::string_view t) { return t == media_type::kOciIndex || t == media_type::kDockerList; }
bool is_image_type(std::string_view t) { return t == media_type::kOciManifest || t == media_type::kDockerManifest; }

std::string string_field(const json& j, const char* key, const std::string& where, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) throw ManifestError(where + ": '" + key + "' is missing");
    return {};
  }
  if (!j[key].is_string()) throw ManifestError(where + ": '" + key + "' must be a string");
  return j[key].get<std::string>();
}

Descriptor descriptor(const json& j, const std::string& where) {
  if (!j.is_object()) throw ManifestError(where + " must be an object");
  Descriptor d;
  d.media_type = string_field(j, "mediaType", where, true);
  d.digest = string_field(j, "digest", where, true);
  if (!valid_sha256_digest(d.digest)) throw ManifestError(where + ": the digest is not a sha256 digest");
  if (!j.contains("size") || !j["size"].is_number_integer() || j["size"].get<int64_t>() < 0) {
    throw ManifestError(where + ": 'size' must be a non-negative integer");
  }
  d.size = j["size"].get<uint64_t>();
  if (j.contains("platform") && !j["platform"].is_null()) {
    const json& p = j["platform"];
    if (!p.is_object()) throw ManifestError(where + ": 'platform' must be an object");
    d.platform = Platform{string_field(p, "os", where + " platform", true),
                          string_field(p, "architecture", where + " platform", true),
                          string_field(p, "variant", where + " platform", false)};
  }
  return d;
}

std::vector<std::string> string_list(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_array()) throw ManifestError(std::string("image config: '") + key + "' must be a list of strings");
  for (const auto& v : j[key]) {
    if (!v.is_string()) throw ManifestError(std::string("image config: '") + key + "' must be a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

std::string manifest_accept_header() {
  return std::string(media_type::kOciIndex) + ", " + std::string(media_type::kOciManifest) + ", " +
         std::string(media_type::kDockerList) + ", " + std::string(media_type::kDockerManifest);
}

Manifest parse_manifest(std::string_view body, std::string_view content_type) {
  const json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded()) throw ManifestError("the manifest is not valid JSON");
  if (!j.is_object()) throw ManifestError("the manifest is not a JSON object");
  if (!j.contains("schemaVersion") || !j["schemaVersion"].is_number_integer() || j["schemaVersion"].get<int64_t>() != 2) {
    throw ManifestError("unsupported manifest schema version (only schema 2 and OCI manifests are supported)");
  }
  const std::string header_type(strip_parameters(content_type));
  std::string type = string_field(j, "mediaType", "manifest", false);
  if (type.empty()) {
    // A generic Content-Type (octet-stream, json) says nothing: the shape decides below.
    if (is_index_type(header_type) || is_image_type(header_type)) type = header_type;
  } else if ((is_index_type(header_type) || is_image_type(header_type)) && header_type != type) {
    throw ManifestError("the manifest's media type does not match the registry's Content-Type");
  }
  if (type.empty() || (!is_index_type(type) && !is_image_type(type))) {
    // OCI lets both be absent; the shape decides then.
    if (type.empty() && j.contains("manifests")) type = media_type::kOciIndex;
    else if (type.empty() && j.contains("layers")) type = media_type::kOciManifest;
    else throw ManifestError("unsupported manifest media type" + (type.size() <= 100 ? " '" + type + "'" : std::string()));
  }
  Manifest m;
  m.media_type = type;
  if (is_index_type(type)) {
    m.kind = Manifest::Kind::index;
    if (!j.contains("manifests") || !j["manifests"].is_array()) throw ManifestError("the index has no 'manifests' list");
    size_t i = 0;
    for (const auto& entry : j["manifests"]) m.manifests.push_back(descriptor(entry, "index entry " + std::to_string(i++)));
    return m;
  }
  m.kind = Manifest::Kind::image;
  if (!j.contains("config")) throw ManifestError("the manifest has no 'config'");
  m.config = descriptor(j["config"], "manifest config");
  if (m.config.media_type != media_type::kOciConfig && m.config.media_type != media_type::kDockerConfig) {
    throw ManifestError("the manifest is not a container image (its config media type is not an image config)");
  }
  if (!j.contains("layers") || !j["layers"].is_array()) throw ManifestError("the manifest has no 'layers' list");
  size_t i = 0;
  for (const auto& entry : j["layers"]) m.layers.push_back(descriptor(entry, "layer " + std::to_string(i++)));
  return m;
}

const Descriptor& select_platform(const Manifest& index, const std::string& os, const std::string& architecture) {
  const Descriptor* first_match = nullptr;
  for (const auto& d : index.manifests) {
    if (!d.platform || d.platform->os != os || d.platform->architecture != architecture) continue;
    if (!is_image_type(d.media_type)) continue;  // nested indexes and artifacts
    if (d.platform->variant.empty()) return d;
    if (!first_match) first_match = &d;
  }
  if (first_match) return *first_match;
  std::string have;
  size_t listed = 0;
  for (const auto& d : index.manifests) {
    if (!d.platform || listed == 8) continue;
    have += (listed++ ? ", " : "") + d.platform->os + "/" + d.platform->architecture +
            (d.platform->variant.empty() ? "" : "/" + d.platform->variant);
  }
  if (have.size() > 300) have = have.substr(0, 300) + "...";
  throw ManifestError("the image has no " + os + "/" + architecture + " manifest" +
                      (have.empty() ? std::string() : " (it has: " + have + ")"));
}

LayerCompression layer_compression(const std::string& type) {
  static const std::pair<std::string_view, LayerCompression> kKnown[] = {
      {"application/vnd.oci.image.layer.v1.tar", LayerCompression::none},
      {"application/vnd.oci.image.layer.v1.tar+gzip", LayerCompression::gzip},
      {"application/vnd.oci.image.layer.v1.tar+zstd", LayerCompression::zstd},
      {"application/vnd.oci.image.layer.nondistributable.v1.tar", LayerCompression::none},
      {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", LayerCompression::gzip},
      {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", LayerCompression::zstd},
      {"application/vnd.docker.image.rootfs.diff.tar.gzip", LayerCompression::gzip},
      {"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", LayerCompression::gzip},
      {"application/vnd.docker.image.rootfs.diff.tar", LayerCompression::none},
  };
  for (const auto& [name, compression] : kKnown) {
    if (type == name) return compression;
  }
  throw ManifestError("unsupported layer media type" + (type.size() <= 100 ? " '" + type + "'" : std::string()));
}

ImageConfig parse_image_config(std::string_view body) {
  const json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw ManifestError("the image config is not a JSON object");
  if (j.contains("os") && j["os"].is_string() && j["os"] != "linux") throw ManifestError("the image is not a linux image");
  ImageConfig c;
  if (!j.contains("config") || j["config"].is_null()) return c;  // OCI allows an image without one
  const json& cfg = j["config"];
  if (!cfg.is_object()) throw ManifestError("image config: 'config' must be an object");
  for (const auto& entry : string_list(cfg, "Env")) {
    const size_t eq = entry.find('=');
    if (eq == 0) throw ManifestError("image config: an Env entry has no name");
    if (eq == std::string::npos) c.env.emplace_back(entry, "");
    else c.env.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  c.workdir = string_field(cfg, "WorkingDir", "image config", false);
  c.user = string_field(cfg, "User", "image config", false);
  c.entrypoint = string_list(cfg, "Entrypoint");
  c.cmd = string_list(cfg, "Cmd");
  return c;
}

}  // namespace cove::builder
