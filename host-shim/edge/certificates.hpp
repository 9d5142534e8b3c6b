#pragma once
// The TLS edge's certificates: a local development CA kept in the state directory and the leaf it
// issues for *.<domain>, <domain> and api.<domain>; or the operator's own files, checked at start-up.
#include <stdexcept>
#include <string>

namespace cove::shim::edge {

struct TlsFiles {
  std::string chain_path;  // PEM: the server certificate first, then its issuers
  std::string key_path;    // PEM private key of the first certificate
};

// Messages never carry host paths or key material.
struct CertificateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The local development CA: <state_dir>/ca.pem (0644; what NODE_EXTRA_CA_CERTS points at) and
// <state_dir>/ca.key (0600), created once (EC P-256, 10 years, CA:TRUE critical, keyCertSign,
// pathlen 0, subject "CN=Cove local CA <short random>"). Then the leaf <state_dir>/tls/edge.pem (leaf
// then CA) + <state_dir>/tls/edge.key (0600): (re)issued when missing, when its SANs are not exactly
// {DNS:*.<host>, DNS:<host>, DNS:api.<host>}, when it was not signed by the current CA, or when it
// expires within 30 days. `domain_host` is the domain without any :port, e.g. "cove.localhost"; it is
// lowercased, and an empty or invalid host name (or a single label: clients refuse "*.localhost")
// is a CertificateError. A CA that exists but cannot be used (corrupt or mismatched key, expired) is
// a CertificateError too, never silently replaced: users may already trust it.
// Writes are atomic (temp file + rename); keys are created 0600. A second call changes nothing.
TlsFiles ensure_local_certificates(const std::string& state_dir, const std::string& domain_host);

// Operator-provided files: they load, and the key matches the first certificate. The
// CertificateError names the config key ("tls_cert"/"tls_key"), never the path.
void check_certificate_files(const TlsFiles& files);

}  // namespace cove::shim::edge
