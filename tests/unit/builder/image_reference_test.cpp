// Image references read with Docker's rules: Docker Hub defaults, registries with ports, digests,
// the default tag, and malformed references refused with a reason.
#include "rootfs-builder/image_reference.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cove::builder {
namespace {

const std::string kDigest = "sha256:" + std::string(64, 'a');

TEST(ImageReference, DockerRulesTable) {
  struct Case {
    std::string text, registry, host;
    int port;
    std::string repository, tag, digest;
  };
  const Case cases[] = {
      {"python:3.12", "registry-1.docker.io", "registry-1.docker.io", 443, "library/python", "3.12", ""},
      {"python", "registry-1.docker.io", "registry-1.docker.io", 443, "library/python", "latest", ""},
      {"e2bdev/code-interpreter", "registry-1.docker.io", "registry-1.docker.io", 443, "e2bdev/code-interpreter", "latest", ""},
      {"docker.io/ubuntu:22.04", "registry-1.docker.io", "registry-1.docker.io", 443, "library/ubuntu", "22.04", ""},
      {"index.docker.io/a/b", "registry-1.docker.io", "registry-1.docker.io", 443, "a/b", "latest", ""},
      {"127.0.0.1:5000/test/base:1", "127.0.0.1:5000", "127.0.0.1", 5000, "test/base", "1", ""},
      {"localhost/x", "localhost", "localhost", 443, "x", "latest", ""},
      {"localhost:5000/x/y/z:v1.2-rc_3", "localhost:5000", "localhost", 5000, "x/y/z", "v1.2-rc_3", ""},
      {"ghcr.io/org/img", "ghcr.io", "ghcr.io", 443, "org/img", "latest", ""},
      {"Registry.Example/ns/img", "Registry.Example", "Registry.Example", 443, "ns/img", "latest", ""},
      {"my-reg.example.com/a__b/c.d-e", "my-reg.example.com", "my-reg.example.com", 443, "a__b/c.d-e", "latest", ""},
      {"alpine@" + kDigest, "registry-1.docker.io", "registry-1.docker.io", 443, "library/alpine", "", kDigest},
      {"h:1/a:t@" + kDigest, "h:1", "h", 1, "a", "t", kDigest},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const ImageReference r = parse_image_reference(c.text);
    EXPECT_EQ(r.registry, c.registry);
    EXPECT_EQ(r.host, c.host);
    EXPECT_EQ(r.port, c.port);
    EXPECT_EQ(r.repository, c.repository);
    EXPECT_EQ(r.tag, c.tag);
    EXPECT_EQ(r.digest, c.digest);
    EXPECT_EQ(r.manifest_reference(), c.digest.empty() ? c.tag : c.digest);
  }
  EXPECT_EQ(parse_image_reference("python:3.12").str(), "registry-1.docker.io/library/python:3.12");
  EXPECT_EQ(parse_image_reference("127.0.0.1:5000/test/base:1").str(), "127.0.0.1:5000/test/base:1");
  EXPECT_EQ(parse_image_reference("alpine@" + kDigest).str(), "registry-1.docker.io/library/alpine@" + kDigest);
}

TEST(ImageReference, MalformedReferencesAreRefusedWithAReason) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty"},
      {"Python:3", "lowercase"},
      {"a//b", "empty path component"},
      {"a/b/", "empty path component"},
      {"a:", "a tag is"},
      {"a:-x", "a tag is"},
      {"a:" + std::string(129, 'x'), "a tag is"},
      {"a@sha256:abc", "64 lowercase hex"},
      {"a@md5:" + std::string(32, 'a'), "only sha256"},
      {"a@sha256:" + std::string(64, 'A'), "64 lowercase hex"},
      {"host:99999/a", "port is out of range"},
      {"-bad.host/a", "registry host is malformed"},
      {"[::1]:5000/a", "IPv6"},
      {"my image", "spaces"},
      {"a\nb", "control"},
      {"reg.io/", "repository is missing"},
      {":tag", "name is missing"},
      {"a--b_-c", "lowercase letters"},
      {"x/" + std::string(300, 'a'), "255"},
  };
  for (const auto& [text, expect] : cases) {
    try {
      parse_image_reference(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ImageReferenceError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << text << " -> " << e.what();
    }
  }
}

}  // namespace
}  // namespace cove::builder
