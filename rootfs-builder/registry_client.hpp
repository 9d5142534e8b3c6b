#pragma once
// The registry side of a pull (OCI distribution API v2) over HTTPS only, server certificate and
// host name verified against the system store plus an optional extra CA bundle. Auth: anonymous
// first; a 401 with a Bearer challenge fetches a token from its realm (with Basic credentials when
// given), a Basic challenge sends the credentials directly. Redirects (blob CDNs) are followed to
// HTTPS only, and credentials never go to a host other than the registry or the token realm.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "rootfs-builder/build_plan.hpp"
#include "rootfs-builder/image_reference.hpp"

namespace httplib {
class SSLClient;
}

namespace cove::builder {

// Client-safe: names the registry host and what failed, never credentials or host paths.
struct RegistryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RegistryOptions {
  std::string ca_file;                   // extra PEM trust; "" = the system store only
  std::chrono::seconds timeout{120};     // connect, and each read or write (not the whole transfer)
};

class RegistryClient {
 public:
  RegistryClient(ImageReference image, std::optional<RegistryCredentials> credentials, RegistryOptions options);
  ~RegistryClient();
  RegistryClient(const RegistryClient&) = delete;
  RegistryClient& operator=(const RegistryClient&) = delete;

  struct Manifest {
    std::string body;
    std::string content_type;
  };
  // GET /v2/<repository>/manifests/<reference>; refuses a body over `limit` bytes.
  Manifest get_manifest(const std::string& reference, uint64_t limit);
  // GET /v2/<repository>/blobs/<digest>, handed to `sink` piece by piece; refuses a body longer
  // than `size` and one that ends short of it. Digests are the caller's to check.
  void get_blob(const std::string& digest, uint64_t size, const std::function<void(const char*, size_t)>& sink);

 private:
  struct Url {
    std::string host;
    int port = 443;
    std::string target;  // path and query
  };
  struct Answer {
    int status = 0;
    std::string content_type, www_authenticate, location, error_body;
  };

  // One GET on the registry, with auth retries and redirects; the 200 body goes to `sink`, limited
  // to `limit` bytes. Throws RegistryError for every other outcome.
  Answer get(const std::string& target, const std::string& accept, uint64_t limit,
             const std::function<void(const char*, size_t)>& sink, const std::string& what);
  Answer send(const Url& url, const std::string& accept, bool with_auth, uint64_t limit,
              const std::function<void(const char*, size_t)>& sink, const std::string& what);
  void authenticate(const std::string& challenge, const std::string& what);
  std::string fetch_token(const std::string& realm, const std::string& service, const std::string& scope);
  httplib::SSLClient& client_for(const std::string& host, int port);
  static std::optional<Url> parse_https_url(const std::string& text);

  ImageReference image_;
  std::optional<RegistryCredentials> credentials_;
  RegistryOptions options_;
  std::string authorization_;  // for the registry host; "" = anonymous
  std::map<std::string, std::unique_ptr<httplib::SSLClient>> clients_;  // by host:port, kept alive
};

}  // namespace cove::builder
