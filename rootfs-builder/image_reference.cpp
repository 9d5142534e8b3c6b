#include "rootfs-builder/image_reference.hpp"

#include <regex>

#include "rootfs-builder/content_digest.hpp"

namespace cove::builder {
namespace {

constexpr size_t kMaxName = 255;  // Docker's limit on domain + repository

// The grammar of github.com/distribution/reference.
const std::regex& domain_pattern() {
  static const std::regex re(
      R"(^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::([0-9]{1,5}))?$)");
  return re;
}
const std::regex& path_component_pattern() {
  static const std::regex re(R"(^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$)");
  return re;
}
const std::regex& tag_pattern() {
  static const std::regex re(R"(^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$)");
  return re;
}

[[noreturn]] void refuse(const std::string& text, const std::string& why) {
  const std::string shown = !text.empty() && text.size() <= 300 ? " '" + text + "'" : "";
  throw ImageReferenceError("invalid image reference" + shown + ": " + why);
}

// Docker reads the first component as a registry when it could not be a repository path.
bool looks_like_domain(const std::string& first) {
  if (first == "localhost") return true;
  if (first.find_first_of(".:") != std::string::npos) return true;
  for (char c : first) {
    if (c >= 'A' && c <= 'Z') return true;
  }
  return false;
}

}  // namespace

std::string ImageReference::str() const {
  std::string out = registry + "/" + repository;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

ImageReference parse_image_reference(const std::string& text) {
  if (text.empty()) refuse(text, "it is empty");
  for (unsigned char c : text) {
    if (c <= 0x20 || c >= 0x7f) refuse("", "it contains spaces, control or non-ASCII characters");
  }
  ImageReference ref;
  std::string rest = text;
  if (const size_t at = rest.find('@'); at != std::string::npos) {
    ref.digest = rest.substr(at + 1);
    rest.resize(at);
    if (ref.digest.rfind("sha256:", 0) != 0) refuse(text, "only sha256 digests are supported");
    if (!valid_sha256_digest(ref.digest)) refuse(text, "the digest must be sha256: and 64 lowercase hex digits");
  }
  const size_t last_slash = rest.rfind('/');
  if (const size_t colon = rest.rfind(':'); colon != std::string::npos &&
                                            (last_slash == std::string::npos || colon > last_slash)) {
    ref.tag = rest.substr(colon + 1);
    rest.resize(colon);
    if (!std::regex_match(ref.tag, tag_pattern())) {
      refuse(text, "a tag is 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'");
    }
  }
  if (rest.empty()) refuse(text, "the image name is missing");

  std::string domain;
  std::string path = rest;
  if (const size_t slash = rest.find('/'); slash != std::string::npos && looks_like_domain(rest.substr(0, slash))) {
    domain = rest.substr(0, slash);
    path = rest.substr(slash + 1);
    if (domain.front() == '[') refuse(text, "IPv6 registry addresses are not supported");
    std::smatch m;
    if (!std::regex_match(domain, m, domain_pattern())) refuse(text, "the registry host is malformed");
    if (m[1].matched) {
      const int port = std::stoi(m[1].str());
      if (port < 1 || port > 65535) refuse(text, "the registry port is out of range");
      ref.port = port;
      ref.host = domain.substr(0, domain.rfind(':'));
    } else {
      ref.host = domain;
    }
  }
  if (path.empty()) refuse(text, "the repository is missing");
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    const std::string component = path.substr(pos, slash - pos);
    if (component.empty()) refuse(text, "the repository has an empty path component");
    if (!std::regex_match(component, path_component_pattern())) {
      refuse(text, "repository names are lowercase letters, digits and single separators ('.', '_', '__', '-')");
    }
    pos = slash + 1;
  }

  if (domain.empty() || domain == "docker.io" || domain == "index.docker.io") {
    // Docker Hub: the API lives on registry-1, and official images are under library/.
    ref.host = "registry-1.docker.io";
    ref.port = 443;
    ref.registry = ref.host;
    if (path.find('/') == std::string::npos) path = "library/" + path;
  } else {
    ref.registry = domain;
  }
  ref.repository = path;
  if ((domain.empty() ? 0 : domain.size() + 1) + path.size() > kMaxName) refuse(text, "the name is longer than 255 characters");
  if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
  return ref;
}

}  // namespace cove::builder
