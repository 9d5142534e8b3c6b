#include "rootfs-builder/registry_client.hpp"

#include "rootfs-builder/oci_manifest.hpp"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace cove::builder {
namespace {

constexpr int kMaxHops = 8;                         // redirects plus the auth retry
constexpr uint64_t kMaxTokenResponse = 1 << 20;     // token JSON
constexpr size_t kMaxErrorBody = 4096;              // kept from non-200 answers, for error codes

std::string base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string query_encode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Printable and bounded, for messages that quote what a server sent.
std::string shown(const std::string& s, size_t max = 80) {
  std::string out;
  for (unsigned char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  return out + (s.size() > max ? "..." : "");
}

bool clean_header_value(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return !s.empty();
}

// `WWW-Authenticate: Bearer realm="…",service="…",scope="…"` → scheme and lower-cased keys.
struct Challenge {
  std::string scheme;
  std::map<std::string, std::string> params;
};

Challenge parse_challenge(const std::string& header) {
  Challenge c;
  size_t pos = header.find_first_not_of(' ');
  if (pos == std::string::npos) return c;
  const size_t end = header.find(' ', pos);
  c.scheme = header.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  for (auto& ch : c.scheme) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  pos = end;
  while (pos != std::string::npos && pos < header.size()) {
    pos = header.find_first_not_of(" ,", pos);
    if (pos == std::string::npos) break;
    const size_t eq = header.find('=', pos);
    if (eq == std::string::npos) break;
    std::string key = header.substr(pos, eq - pos);
    for (auto& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::string value;
    pos = eq + 1;
    if (pos < header.size() && header[pos] == '"') {
      for (++pos; pos < header.size() && header[pos] != '"'; ++pos) {
        if (header[pos] == '\\' && pos + 1 < header.size()) ++pos;
        value += header[pos];
      }
      if (pos < header.size()) ++pos;  // closing quote
    } else {
      const size_t comma = header.find(',', pos);
      value = header.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma;
    }
    c.params[key] = value;
  }
  return c;
}

// The registry error code of a JSON error body ("MANIFEST_UNKNOWN"), or "".
std::string registry_error_code(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("errors") || !j["errors"].is_array() || j["errors"].empty()) return {};
  const auto& e = j["errors"][0];
  if (!e.is_object() || !e.contains("code") || !e["code"].is_string()) return {};
  return shown(e["code"].get<std::string>(), 40);
}

std::string describe_error(httplib::Error err) {
  switch (err) {
    case httplib::Error::Connection: return "cannot connect";
    case httplib::Error::ConnectionTimeout: return "the connection timed out";
    case httplib::Error::Read: return "the connection failed while reading (or timed out)";
    case httplib::Error::Write: return "the connection failed while writing";
    case httplib::Error::SSLConnection: return "the TLS handshake failed";
    case httplib::Error::SSLServerVerification: return "its TLS certificate could not be verified (untrusted or wrong host name)";
    case httplib::Error::SSLLoadingCerts: return "the trusted certificates could not be loaded";
    default: return httplib::to_string(err);
  }
}

}  // namespace

std::optional<RegistryClient::Url> RegistryClient::parse_https_url(const std::string& text) {
  if (text.rfind("https://", 0) != 0) return std::nullopt;
  for (unsigned char c : text) {
    if (c <= 0x20 || c >= 0x7f) return std::nullopt;
  }
  size_t end = text.find_first_of("/?#", 8);
  if (end == std::string::npos) end = text.size();
  const std::string authority = text.substr(8, end - 8);
  if (authority.empty() || authority.find('@') != std::string::npos || authority.front() == '[') return std::nullopt;
  Url url;
  const size_t colon = authority.rfind(':');
  url.host = authority.substr(0, colon);
  if (url.host.empty()) return std::nullopt;
  if (colon != std::string::npos) {
    const std::string port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    url.port = std::stoi(port);
    if (url.port < 1 || url.port > 65535) return std::nullopt;
  }
  url.target = text.substr(end);
  if (const size_t hash = url.target.find('#'); hash != std::string::npos) url.target.resize(hash);
  if (url.target.empty() || url.target.front() != '/') url.target = "/" + url.target;
  return url;
}

RegistryClient::RegistryClient(ImageReference image, std::optional<RegistryCredentials> credentials,
                               RegistryOptions options)
    : image_(std::move(image)), credentials_(std::move(credentials)), options_(std::move(options)) {}

RegistryClient::~RegistryClient() = default;

httplib::SSLClient& RegistryClient::client_for(const std::string& host, int port) {
  const std::string key = host + ":" + std::to_string(port);
  auto& slot = clients_[key];
  if (slot) return *slot;
  auto cli = std::make_unique<httplib::SSLClient>(host, port);
  if (!cli->is_valid() || cli->ssl_context() == nullptr) throw RegistryError("cannot set up TLS for " + shown(key));
  SSL_CTX_set_min_proto_version(cli->ssl_context(), TLS1_2_VERSION);
  // Added to the system store, which httplib loads too when no CA path is set on it.
  if (!options_.ca_file.empty() &&
      SSL_CTX_load_verify_locations(cli->ssl_context(), options_.ca_file.c_str(), nullptr) != 1) {
    throw RegistryError("the CA bundle configured for registries (registry_ca) cannot be loaded");
  }
  cli->enable_server_certificate_verification(true);
  const auto t = static_cast<time_t>(options_.timeout.count());
  cli->set_connection_timeout(t);
  cli->set_read_timeout(t);
  cli->set_write_timeout(t);
  cli->set_keep_alive(true);
  cli->set_follow_location(false);  // by hand: credentials must not follow a redirect to another host
  cli->set_url_encode(false);       // targets are built from checked parts
  cli->set_decompress(false);       // digests are over the bytes as stored
  slot = std::move(cli);
  return *slot;
}

RegistryClient::Answer RegistryClient::send(const Url& url, const std::string& accept, bool with_auth, uint64_t limit,
                                            const std::function<void(const char*, size_t)>& sink,
                                            const std::string& what) {
  httplib::Headers headers{{"Accept", accept}, {"Accept-Encoding", "identity"}, {"User-Agent", "cove-builder"}};
  if (with_auth && !authorization_.empty()) headers.emplace("Authorization", authorization_);
  Answer a;
  uint64_t received = 0;
  bool too_large = false;
  std::exception_ptr sink_error;
  auto& cli = client_for(url.host, url.port);
  const auto res = cli.Get(
      url.target, headers,
      [&](const httplib::Response& r) {
        a.status = r.status;
        a.content_type = r.get_header_value("Content-Type");
        a.www_authenticate = r.get_header_value("WWW-Authenticate");
        a.location = r.get_header_value("Location");
        if (a.status == 200 && r.has_header("Content-Length")) {
          const std::string len = r.get_header_value("Content-Length");
          if (len.size() > 19 || std::stoull("0" + len) > limit) too_large = true;
        }
        return !too_large;
      },
      [&](const char* data, size_t n) {
        if (a.status != 200) {
          if (a.error_body.size() < kMaxErrorBody) a.error_body.append(data, std::min(n, kMaxErrorBody - a.error_body.size()));
          return true;
        }
        if (n > limit - received) {
          too_large = true;
          return false;
        }
        received += n;
        try {
          sink(data, n);
        } catch (...) {
          sink_error = std::current_exception();
          return false;
        }
        return true;
      });
  if (sink_error) std::rethrow_exception(sink_error);
  if (too_large) throw RegistryError(what + " is larger than expected (" + std::to_string(limit) + " bytes at most)");
  if (!res) {
    if (a.status != 0 && a.status != 200) return a;  // the error body was cut: the status is what counts
    throw RegistryError("registry " + shown(url.host + ":" + std::to_string(url.port)) + ": " + describe_error(res.error()) +
                        " (" + what + ")");
  }
  return a;
}

RegistryClient::Answer RegistryClient::get(const std::string& target, const std::string& accept, uint64_t limit,
                                           const std::function<void(const char*, size_t)>& sink,
                                           const std::string& what) {
  Url url{image_.host, image_.port, target};
  bool on_registry = true, authenticated = false;
  for (int hop = 0; hop < kMaxHops; ++hop) {
    Answer a = send(url, accept, on_registry, limit, sink, what);
    if (a.status == 200) return a;
    const std::string code = registry_error_code(a.error_body);
    const std::string suffix = code.empty() ? "" : " (" + code + ")";
    switch (a.status) {
      case 401:
        if (on_registry && !authenticated) {
          authenticate(a.www_authenticate, what);
          authenticated = true;
          continue;
        }
        throw RegistryError(credentials_ ? "the registry " + image_.registry + " refused the credentials for " + what
                                         : "the registry " + image_.registry + " requires credentials (fromImageRegistry) for " + what);
      case 403: throw RegistryError("access denied by " + image_.registry + " to " + what + suffix);
      case 404: throw RegistryError(what + " not found on " + image_.registry + suffix);
      case 429: throw RegistryError("the registry " + image_.registry + " is rate-limiting pulls; try again later");
      case 301: case 302: case 303: case 307: case 308: {
        const std::string& loc = a.location;
        bool bad = loc.empty();
        for (unsigned char c : loc) bad = bad || c <= 0x20 || c >= 0x7f;
        if (bad) throw RegistryError("the registry redirected " + what + " to an invalid location");
        if (loc.rfind("https://", 0) == 0) {
          const auto next = parse_https_url(loc);
          if (!next) throw RegistryError("the registry redirected " + what + " to an invalid location");
          url = *next;
        } else if (loc.front() == '/' && (loc.size() < 2 || loc[1] != '/')) {
          url.target = loc;
        } else {
          throw RegistryError("the registry redirected " + what + " away from HTTPS; refused");
        }
        on_registry = url.host == image_.host && url.port == image_.port;
        continue;
      }
      default:
        throw RegistryError("the registry " + image_.registry + " answered HTTP " + std::to_string(a.status) + " for " + what + suffix);
    }
  }
  throw RegistryError("too many redirects for " + what);
}

void RegistryClient::authenticate(const std::string& header, const std::string& what) {
  const Challenge c = parse_challenge(header);
  if (c.scheme == "basic") {
    if (!credentials_) throw RegistryError("the registry " + image_.registry + " requires credentials (fromImageRegistry) for " + what);
    authorization_ = "Basic " + base64(credentials_->username + ":" + credentials_->password);
    return;
  }
  if (c.scheme != "bearer") {
    throw RegistryError("the registry " + image_.registry + " asks for an unsupported authentication scheme" +
                        (c.scheme.empty() ? std::string() : " '" + shown(c.scheme, 20) + "'"));
  }
  const auto realm = c.params.find("realm");
  if (realm == c.params.end() || realm->second.empty()) throw RegistryError("the registry's token challenge has no realm");
  const auto service = c.params.find("service");
  const auto scope = c.params.find("scope");
  authorization_ = "Bearer " + fetch_token(realm->second, service == c.params.end() ? "" : service->second,
                                           scope == c.params.end() ? "repository:" + image_.repository + ":pull"
                                                                   : scope->second);
}

std::string RegistryClient::fetch_token(const std::string& realm, const std::string& service, const std::string& scope) {
  if (realm.rfind("https://", 0) != 0) throw RegistryError("the registry's token service is not HTTPS; refused");
  auto parsed = parse_https_url(realm);
  if (!parsed) throw RegistryError("the registry's token service address is invalid");
  Url url = *parsed;
  char sep = url.target.find('?') == std::string::npos ? '?' : '&';
  if (!service.empty()) {
    url.target += sep + std::string("service=") + query_encode(service);
    sep = '&';
  }
  url.target += sep + std::string("scope=") + query_encode(scope);

  // The token service gets the credentials (as Docker sends them); the registry only the token.
  const std::string saved = std::exchange(authorization_, credentials_ ? "Basic " + base64(credentials_->username + ":" +
                                                                                          credentials_->password)
                                                                        : std::string());
  std::string body;
  Answer a;
  try {
    a = send(url, "application/json", true, kMaxTokenResponse, [&](const char* d, size_t n) { body.append(d, n); },
             "the registry token");
  } catch (...) {
    authorization_ = saved;
    throw;
  }
  authorization_ = saved;
  if (a.status == 401 || a.status == 403) {
    throw RegistryError(credentials_ ? "the registry's token service refused the credentials"
                                     : "the registry's token service requires credentials (fromImageRegistry)");
  }
  if (a.status != 200) throw RegistryError("the registry's token service answered HTTP " + std::to_string(a.status));
  const auto j = nlohmann::json::parse(body, nullptr, false);
  std::string token;
  if (!j.is_discarded() && j.is_object()) {
    for (const char* key : {"token", "access_token"}) {
      if (j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty()) {
        token = j[key].get<std::string>();
        break;
      }
    }
  }
  if (!clean_header_value(token)) throw RegistryError("the registry's token service sent no usable token");
  return token;
}

RegistryClient::Manifest RegistryClient::get_manifest(const std::string& reference, uint64_t limit) {
  Manifest m;
  const Answer a = get("/v2/" + image_.repository + "/manifests/" + reference, manifest_accept_header(), limit,
                       [&](const char* d, size_t n) { m.body.append(d, n); }, "manifest " + image_.repository + ":" + reference);
  m.content_type = a.content_type;
  return m;
}

void RegistryClient::get_blob(const std::string& digest, uint64_t size,
                              const std::function<void(const char*, size_t)>& sink) {
  uint64_t received = 0;
  const std::string what = "blob " + digest.substr(0, 19);
  get("/v2/" + image_.repository + "/blobs/" + digest, "*/*", size,
      [&](const char* d, size_t n) {
        received += n;
        sink(d, n);
      },
      what);
  if (received != size) throw RegistryError(what + " ended after " + std::to_string(received) + " of " + std::to_string(size) + " bytes");
}

}  // namespace cove::builder
