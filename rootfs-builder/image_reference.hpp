#pragma once
// Image references as Docker reads them: `python:3.12` is registry-1.docker.io/library/python:3.12,
// `host:port/a/b:tag` names another registry, `@sha256:…` pins a digest, no tag means `latest`.
#include <stdexcept>
#include <string>

namespace cove::builder {

struct ImageReferenceError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct ImageReference {
  std::string registry;    // "registry-1.docker.io", "127.0.0.1:5000": host[:port] as dialed
  std::string host;        // the registry without the port
  int port = 443;
  std::string repository;  // "library/python"
  std::string tag;         // "latest" when neither a tag nor a digest was given; "" with a digest alone
  std::string digest;      // "sha256:…" or ""

  // What the manifest request names: the digest when pinned, else the tag.
  std::string manifest_reference() const { return digest.empty() ? tag : digest; }
  // "127.0.0.1:5000/test/base:1", "registry-1.docker.io/library/python@sha256:…"
  std::string str() const;
};

// Throws ImageReferenceError naming what is wrong (the reference is echoed only when short).
ImageReference parse_image_reference(const std::string& text);

}  // namespace cove::builder
