// Manifests and indexes in OCI and Docker media types, the linux/amd64 pick, the checks that
// refuse malformed registry JSON, layer compressions and the image config fields.
#include "rootfs-builder/oci_manifest.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace cove::builder {
namespace {

using nlohmann::json;

std::string d(char c) { return "sha256:" + std::string(64, c); }

json entry(const std::string& type, char digit, const std::string& os, const std::string& arch,
           const std::string& variant = "") {
  json p = {{"os", os}, {"architecture", arch}};
  if (!variant.empty()) p["variant"] = variant;
  return {{"mediaType", type}, {"digest", d(digit)}, {"size", 100}, {"platform", p}};
}

json image_manifest(const std::string& type, const std::string& config_type, const std::string& layer_type) {
  return {{"schemaVersion", 2},
          {"mediaType", type},
          {"config", {{"mediaType", config_type}, {"digest", d('c')}, {"size", 7}}},
          {"layers", json::array({{{"mediaType", layer_type}, {"digest", d('1')}, {"size", 10}},
                                  {{"mediaType", layer_type}, {"digest", d('2')}, {"size", 20}}})}};
}

std::string error_of(const std::string& body, const std::string& content_type = "") {
  try {
    parse_manifest(body, content_type);
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "";
}

TEST(OciManifest, ImageManifestsInOciAndDockerTypes) {
  for (const auto& [type, config, layer] :
       {std::tuple{std::string(media_type::kOciManifest), std::string(media_type::kOciConfig),
                   std::string("application/vnd.oci.image.layer.v1.tar+gzip")},
        std::tuple{std::string(media_type::kDockerManifest), std::string(media_type::kDockerConfig),
                   std::string("application/vnd.docker.image.rootfs.diff.tar.gzip")}}) {
    SCOPED_TRACE(type);
    const Manifest m = parse_manifest(image_manifest(type, config, layer).dump(), type + "; charset=utf-8");
    EXPECT_EQ(m.kind, Manifest::Kind::image);
    EXPECT_EQ(m.media_type, type);
    EXPECT_EQ(m.config.digest, d('c'));
    EXPECT_EQ(m.config.size, 7u);
    ASSERT_EQ(m.layers.size(), 2u);
    EXPECT_EQ(m.layers[0].digest, d('1'));
    EXPECT_EQ(m.layers[1].size, 20u);
    EXPECT_EQ(layer_compression(m.layers[0].media_type), LayerCompression::gzip);
  }
  // No mediaType in the body: the Content-Type decides; neither: the shape does.
  json bare = image_manifest(std::string(media_type::kOciManifest), std::string(media_type::kOciConfig),
                             "application/vnd.oci.image.layer.v1.tar");
  bare.erase("mediaType");
  EXPECT_EQ(parse_manifest(bare.dump(), media_type::kOciManifest).kind, Manifest::Kind::image);
  EXPECT_EQ(parse_manifest(bare.dump(), "application/octet-stream").kind, Manifest::Kind::image);
}

TEST(OciManifest, IndexesPickLinuxAmd64PreferringNoVariant) {
  for (const auto& type : {std::string(media_type::kOciIndex), std::string(media_type::kDockerList)}) {
    SCOPED_TRACE(type);
    const std::string child = type == media_type::kOciIndex ? std::string(media_type::kOciManifest)
                                                            : std::string(media_type::kDockerManifest);
    json index = {{"schemaVersion", 2},
                  {"mediaType", type},
                  {"manifests", json::array({entry(child, '1', "linux", "arm64", "v8"), entry(child, '2', "linux", "amd64", "v3"),
                                             entry(child, '3', "windows", "amd64"), entry(child, '4', "linux", "amd64"),
                                             entry(child, '5', "linux", "amd64")})}};
    const Manifest m = parse_manifest(index.dump(), type);
    ASSERT_EQ(m.kind, Manifest::Kind::index);
    ASSERT_EQ(m.manifests.size(), 5u);
    EXPECT_EQ(select_platform(m).digest, d('4'));  // the first without a variant
    EXPECT_EQ(select_platform(m, "linux", "arm64").digest, d('1'));

    // Only variants: the first of them.
    index["manifests"] = json::array({entry(child, '6', "linux", "amd64", "v2"), entry(child, '7', "linux", "amd64", "v3")});
    EXPECT_EQ(select_platform(parse_manifest(index.dump(), type)).digest, d('6'));

    // Attestations (unknown/unknown) and other platforms only: refused naming what there is.
    index["manifests"] = json::array({entry(child, '8', "linux", "arm64"), entry(child, '9', "unknown", "unknown")});
    try {
      select_platform(parse_manifest(index.dump(), type));
      ADD_FAILURE() << "no amd64 entry, yet one was picked";
    } catch (const ManifestError& e) {
      EXPECT_NE(std::string(e.what()).find("no linux/amd64 manifest (it has: linux/arm64, unknown/unknown)"), std::string::npos)
          << e.what();
    }
  }
}

TEST(OciManifest, MalformedManifestsAreRefused) {
  const std::string oci(media_type::kOciManifest), cfg(media_type::kOciConfig);
  const std::string layer = "application/vnd.oci.image.layer.v1.tar+gzip";
  EXPECT_NE(error_of("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"schemaVersion":1,"name":"x","fsLayers":[]})").find("schema version"), std::string::npos);

  json m = image_manifest(oci, cfg, layer);
  m["layers"][1]["digest"] = "sha256:xyz";
  EXPECT_NE(error_of(m.dump()).find("layer 1: the digest is not a sha256 digest"), std::string::npos);
  m = image_manifest(oci, cfg, layer);
  m["layers"][0]["size"] = -1;
  EXPECT_NE(error_of(m.dump()).find("'size' must be a non-negative integer"), std::string::npos);
  m = image_manifest(oci, cfg, layer);
  m["layers"][0].erase("mediaType");
  EXPECT_NE(error_of(m.dump()).find("'mediaType' is missing"), std::string::npos);
  m = image_manifest(oci, cfg, layer);
  m.erase("config");
  EXPECT_NE(error_of(m.dump()).find("no 'config'"), std::string::npos);
  m = image_manifest(oci, cfg, layer);
  m["layers"] = "none";
  EXPECT_NE(error_of(m.dump()).find("no 'layers' list"), std::string::npos);
  // An artifact (e.g. a Helm chart) is not a container image.
  m = image_manifest(oci, "application/vnd.cncf.helm.config.v1+json", layer);
  EXPECT_NE(error_of(m.dump()).find("not a container image"), std::string::npos);
  // The body says one thing, the registry another.
  EXPECT_NE(error_of(image_manifest(oci, cfg, layer).dump(), std::string(media_type::kDockerManifest)).find("does not match"),
            std::string::npos);
  m = image_manifest(oci, cfg, layer);
  m["mediaType"] = "application/vnd.docker.distribution.manifest.v1+prettyjws";
  EXPECT_NE(error_of(m.dump()).find("unsupported manifest media type"), std::string::npos);
  json index = {{"schemaVersion", 2}, {"mediaType", media_type::kOciIndex}, {"manifests", json::array({json{{"digest", d('1')}}})}};
  EXPECT_NE(error_of(index.dump()).find("index entry 0"), std::string::npos);
  index["manifests"] = json::array({entry(oci, '1', "linux", "amd64")});
  index["manifests"][0]["platform"] = {{"os", "linux"}};
  EXPECT_NE(error_of(index.dump()).find("'architecture' is missing"), std::string::npos);
}

TEST(OciManifest, LayerCompressions) {
  EXPECT_EQ(layer_compression("application/vnd.oci.image.layer.v1.tar"), LayerCompression::none);
  EXPECT_EQ(layer_compression("application/vnd.oci.image.layer.v1.tar+gzip"), LayerCompression::gzip);
  EXPECT_EQ(layer_compression("application/vnd.oci.image.layer.v1.tar+zstd"), LayerCompression::zstd);
  EXPECT_EQ(layer_compression("application/vnd.docker.image.rootfs.diff.tar.gzip"), LayerCompression::gzip);
  EXPECT_THROW(layer_compression("application/vnd.in-toto+json"), ManifestError);
  EXPECT_THROW(layer_compression(""), ManifestError);
}

TEST(OciManifest, ImageConfigFields) {
  const json config = {{"architecture", "amd64"},
                       {"os", "linux"},
                       {"config",
                        {{"Env", {"PATH=/usr/local/bin:/usr/bin", "EMPTY=", "EQ=a=b", "BARE"}},
                         {"WorkingDir", "/srv"},
                         {"User", "1000:1000"},
                         {"Entrypoint", {"/bin/sh", "-c"}},
                         {"Cmd", {"echo hi"}}}}};
  const ImageConfig c = parse_image_config(config.dump());
  const std::vector<std::pair<std::string, std::string>> env = {
      {"PATH", "/usr/local/bin:/usr/bin"}, {"EMPTY", ""}, {"EQ", "a=b"}, {"BARE", ""}};
  EXPECT_EQ(c.env, env);
  EXPECT_EQ(c.workdir, "/srv");
  EXPECT_EQ(c.user, "1000:1000");
  EXPECT_EQ(c.entrypoint, (std::vector<std::string>{"/bin/sh", "-c"}));
  EXPECT_EQ(c.cmd, (std::vector<std::string>{"echo hi"}));

  // Null and absent fields are empty; an image without a config section is valid.
  const ImageConfig empty = parse_image_config(R"({"os":"linux","config":{"Entrypoint":null,"Env":null}})");
  EXPECT_TRUE(empty.env.empty() && empty.entrypoint.empty() && empty.cmd.empty() && empty.workdir.empty());
  EXPECT_TRUE(parse_image_config(R"({"architecture":"amd64"})").env.empty());

  EXPECT_THROW(parse_image_config("nope"), ManifestError);
  EXPECT_THROW(parse_image_config(R"({"config":{"Env":"A=B"}})"), ManifestError);
  EXPECT_THROW(parse_image_config(R"({"config":{"Cmd":[1]}})"), ManifestError);
  EXPECT_THROW(parse_image_config(R"({"config":{"Env":["=x"]}})"), ManifestError);
  EXPECT_THROW(parse_image_config(R"({"config":{"User":5}})"), ManifestError);
  EXPECT_THROW(parse_image_config(R"({"os":"windows"})"), ManifestError);
}

}  // namespace
}  // namespace cove::builder
