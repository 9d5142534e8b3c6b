#include "edge/certificates.hpp"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <string_view>
#include <vector>

#include "auth/random.hpp"

namespace cove::shim::edge {
namespace {

template <auto Free>
struct Freer {
  template <class T>
  void operator()(T* p) const { Free(p); }
};
using BioPtr = std::unique_ptr<BIO, Freer<BIO_free_all>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Freer<X509_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Freer<X509_EXTENSION_free>>;
using NamesPtr = std::unique_ptr<GENERAL_NAMES, Freer<GENERAL_NAMES_free>>;
using BignumPtr = std::unique_ptr<BIGNUM, Freer<BN_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Freer<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Freer<X509_STORE_CTX_free>>;

constexpr long kCaDays = 3650;
constexpr long kLeafDays = 397;  // the longest validity browsers accept for a server certificate
constexpr long kRenewDays = 30;
// Issued slightly in the past so a client whose clock lags a little still accepts a fresh leaf.
constexpr long kBackdateSeconds = 3600;
constexpr size_t kMaxPemBytes = 1 << 20;

constexpr const char* kCaCertName = "ca.pem";
constexpr const char* kCaKeyName = "ca.key";
constexpr const char* kLeafCertName = "edge.pem";
constexpr const char* kLeafKeyName = "edge.key";

// Leaves the thread's OpenSSL error queue empty: a stale entry would be misread by the next TLS
// operation on this thread (asio reads the queue after a failed SSL call).
[[noreturn]] void fail(const std::string& message) {
  ERR_clear_error();
  throw CertificateError(message);
}

[[noreturn]] void fail_errno(const std::string& message, int err) {
  fail(message + ": " + std::strerror(err));
}

// Wipes a string that held key material once it goes out of scope, exceptions included.
struct Wipe {
  std::string& text;
  ~Wipe() { OPENSSL_cleanse(text.data(), text.size()); }
};

// PEM loading must never prompt on the terminal for a passphrase: an encrypted key is an error.
int refuse_passphrase(char*, int, int, void*) { return -1; }

struct FileText {
  bool exists = false;
  std::string data;
  mode_t mode = 0;
};

// `label` names the file in messages ("ca.key in the state directory", "tls_cert"); never the path.
FileText read_file(const std::string& path, const std::string& label) {
  FileText out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return out;
    fail_errno("cannot open " + label, errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail_errno("cannot stat " + label, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(label + " is not a regular file");
  }
  out.exists = true;
  out.mode = st.st_mode & 07777;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      OPENSSL_cleanse(out.data.data(), out.data.size());
      fail_errno("cannot read " + label, err);
    }
    if (n == 0) break;
    out.data.append(buffer, static_cast<size_t>(n));
    if (out.data.size() > kMaxPemBytes) {
      ::close(fd);
      OPENSSL_cleanse(out.data.data(), out.data.size());
      fail(label + " is too large to be a PEM file");
    }
  }
  OPENSSL_cleanse(buffer, sizeof buffer);
  ::close(fd);
  return out;
}

// The temporary file is created with the final mode's owner bits only (0600), so a key is never
// readable by others, and renamed over the target: readers see the old file or the whole new one.
void write_atomically(const std::string& dir, const std::string& name, std::string_view data,
                      mode_t mode) {
  const std::string path = dir + "/" + name;
  const std::string tmp = dir + "/." + name + ".tmp-" + random_lowercase_alnum(8);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) fail_errno("cannot create " + name + " in the state directory", errno);
  int err = 0;
  size_t done = 0;
  while (err == 0 && done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    else done += static_cast<size_t>(n);
  }
  // fchmod rather than the open mode: the umask must not decide what clients can read (ca.pem).
  if (err == 0 && ::fchmod(fd, mode) != 0) err = errno;
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail_errno("cannot write " + name + " in the state directory", err);
  }
  // The rename itself must survive a crash too.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

// mkdir -p; new components are 0700 (the state directory holds keys).
void ensure_private_dir(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      fail_errno("cannot create the state directory", errno);
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) fail_errno("cannot access the state directory", errno);
  if (!S_ISDIR(st.st_mode)) fail("the state directory is not a directory");
}

// Lowercased; DNS labels of letters, digits and inner hyphens; at least two labels, because
// clients refuse a wildcard directly under a top-level name ("*.localhost"); not an IP address.
std::string normalise_host(const std::string& domain_host) {
  std::string host = domain_host;
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
  const std::string rule =
      " (dot-separated labels of letters, digits and inner '-', at least two labels, no port, "
      "e.g. cove.localhost)";
  if (host.empty()) fail("the domain for the TLS certificate is empty");
  // "api." + host must still be a valid name (253 characters at most).
  if (host.size() > 249) fail("the domain for the TLS certificate is too long");
  size_t labels = 0;
  bool last_all_digits = false;
  size_t start = 0;
  while (start <= host.size()) {
    size_t end = host.find('.', start);
    if (end == std::string::npos) end = host.size();
    std::string_view label(host.data() + start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      fail("the domain for the TLS certificate is not a valid host name" + rule);
    }
    last_all_digits = true;
    for (char c : label) {
      bool digit = c >= '0' && c <= '9';
      if (!digit && !(c >= 'a' && c <= 'z') && c != '-') {
        fail("the domain for the TLS certificate is not a valid host name" + rule);
      }
      last_all_digits = last_all_digits && digit;
    }
    ++labels;
    start = end + 1;
  }
  if (labels < 2 || last_all_digits) {
    fail("the domain for the TLS certificate is not a valid host name" + rule);
  }
  return host;
}

std::vector<std::string> expected_names(const std::string& host) {
  std::vector<std::string> names{"*." + host, host, "api." + host};
  std::sort(names.begin(), names.end());
  return names;
}

// ---- PEM ----

std::vector<CertPtr> parse_certificates(std::string_view pem) {
  std::vector<CertPtr> certs;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) fail("out of memory reading a certificate");
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, refuse_passphrase, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the loop always ends on a "no start line" error
  return certs;
}

KeyPtr parse_private_key(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) fail("out of memory reading a private key");
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, refuse_passphrase, nullptr));
  ERR_clear_error();
  return key;
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  if (len <= 0 || data == nullptr) fail("cannot encode PEM");
  return std::string(data, static_cast<size_t>(len));
}

std::string certificate_pem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) fail("cannot encode a certificate as PEM");
  return bio_text(bio.get());
}

std::string private_key_pem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    fail("cannot encode a private key as PEM");
  }
  std::string text = bio_text(bio.get());
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  if (len > 0 && data != nullptr) OPENSSL_cleanse(data, static_cast<size_t>(len));
  return text;
}

// ---- issuing ----

KeyPtr new_p256_key() {
  KeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) fail("cannot generate an EC P-256 key");
  return key;
}

// Version 3, a random positive 16-byte serial, notBefore an hour back, the subject's key and CN.
CertPtr new_certificate(EVP_PKEY* subject_key, const std::string& common_name, long days) {
  CertPtr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) fail("cannot create a certificate");

  std::string serial = random_bytes(16);
  // Top bit clear keeps the INTEGER positive; the next bit set keeps it exactly 16 bytes long.
  serial[0] = static_cast<char>((static_cast<unsigned char>(serial[0]) & 0x7f) | 0x40);
  BignumPtr bn(BN_bin2bn(reinterpret_cast<const unsigned char*>(serial.data()),
                         static_cast<int>(serial.size()), nullptr));
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    fail("cannot set a certificate serial number");
  }

  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kBackdateSeconds) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), static_cast<int>(days), -kBackdateSeconds,
                       nullptr) == nullptr) {
    fail("cannot set a certificate validity");
  }
  if (X509_set_pubkey(cert.get(), subject_key) != 1) fail("cannot set a certificate key");

  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                                 0) != 1) {
    fail("cannot set a certificate subject");
  }
  return cert;
}

void add_extension(X509* cert, X509V3_CTX* ctx, int nid, const std::string& value) {
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) fail("cannot add a certificate extension");
}

void sign(X509* cert, EVP_PKEY* issuer_key) {
  if (X509_sign(cert, issuer_key, EVP_sha256()) <= 0) fail("cannot sign a certificate");
}

CertPtr make_ca_certificate(EVP_PKEY* key) {
  CertPtr cert = new_certificate(key, "Cove local CA " + random_lowercase_alnum(6), kCaDays);
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) != 1) {
    fail("cannot set a certificate issuer");
  }
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  add_extension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  add_extension(cert.get(), &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
  add_extension(cert.get(), &ctx, NID_subject_key_identifier, "hash");  // before AKI, which copies it
  add_extension(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always");
  sign(cert.get(), key);
  return cert;
}

CertPtr make_leaf_certificate(EVP_PKEY* key, const std::string& host, X509* ca, EVP_PKEY* ca_key) {
  // Clients match the SANs only; the CN is informative and limited to 64 characters.
  CertPtr cert = new_certificate(key, host.size() <= 64 ? host : "Cove edge", kLeafDays);
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(ca)) != 1) {
    fail("cannot set a certificate issuer");
  }
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, ca, cert.get(), nullptr, nullptr, 0);
  add_extension(cert.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE");
  add_extension(cert.get(), &ctx, NID_key_usage, "critical,digitalSignature");
  add_extension(cert.get(), &ctx, NID_ext_key_usage, "serverAuth");
  add_extension(cert.get(), &ctx, NID_subject_key_identifier, "hash");
  add_extension(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always");
  add_extension(cert.get(), &ctx, NID_subject_alt_name,
                "DNS:*." + host + ",DNS:" + host + ",DNS:api." + host);
  sign(cert.get(), ca_key);
  return cert;
}

// ---- the CA ----

struct Authority {
  CertPtr cert;
  KeyPtr key;
};

const std::string kStartOver =
    "; to start over, remove ca.pem and ca.key from the state directory (clients must then trust "
    "the new ca.pem)";

Authority create_authority(const std::string& dir) {
  Authority ca{nullptr, new_p256_key()};
  ca.cert = make_ca_certificate(ca.key.get());
  std::string key_text = private_key_pem(ca.key.get());
  Wipe wipe{key_text};
  // The key first: ca.pem is the commit point, so a crash in between only leaves a key no one trusts.
  write_atomically(dir, kCaKeyName, key_text, 0600);
  write_atomically(dir, kCaCertName, certificate_pem(ca.cert.get()), 0644);
  return ca;
}

// A CA that exists is never replaced here: users may have told their clients to trust it.
Authority load_or_create_authority(const std::string& dir) {
  FileText cert_file = read_file(dir + "/" + kCaCertName, "ca.pem in the state directory");
  if (!cert_file.exists) return create_authority(dir);

  std::vector<CertPtr> certs = parse_certificates(cert_file.data);
  if (certs.empty()) fail("ca.pem in the state directory holds no PEM certificate" + kStartOver);
  Authority ca{std::move(certs.front()), nullptr};
  if (X509_check_ca(ca.cert.get()) == 0) {
    fail("ca.pem in the state directory is not a CA certificate" + kStartOver);
  }
  if (X509_cmp_current_time(X509_get0_notAfter(ca.cert.get())) <= 0) {
    fail("the local CA (ca.pem in the state directory) has expired" + kStartOver);
  }

  FileText key_file = read_file(dir + "/" + kCaKeyName, "ca.key in the state directory");
  Wipe wipe{key_file.data};
  if (!key_file.exists) fail("ca.key is missing from the state directory" + kStartOver);
  // Like ssh with private keys: a CA key others can read is refused rather than silently used.
  if ((key_file.mode & 077) != 0) {
    fail("ca.key in the state directory is readable by other users; make it mode 0600");
  }
  ca.key = parse_private_key(key_file.data);
  if (!ca.key) fail("ca.key in the state directory is not a readable PEM private key" + kStartOver);
  if (X509_check_private_key(ca.cert.get(), ca.key.get()) != 1) {
    fail("ca.key in the state directory does not match ca.pem" + kStartOver);
  }
  ERR_clear_error();
  return ca;
}

// ---- the leaf ----

bool has_exactly_names(X509* leaf, const std::vector<std::string>& expected) {
  NamesPtr names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr)));
  if (!names) return false;
  std::vector<std::string> found;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_DNS) return false;
    const ASN1_IA5STRING* dns = name->d.dNSName;
    found.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                       static_cast<size_t>(ASN1_STRING_length(dns)));
  }
  std::sort(found.begin(), found.end());
  return found == expected;
}

// Chains to the CA as a TLS server certificate, valid now: OpenSSL's own verification.
bool verifies_against(X509* leaf, X509* ca) {
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  bool ok = store && ctx && X509_STORE_add_cert(store.get(), ca) == 1 &&
            X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr) == 1 &&
            X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER) == 1 &&
            X509_verify_cert(ctx.get()) == 1;
  ERR_clear_error();
  return ok;
}

bool leaf_is_current(const std::string& tls_dir, const Authority& ca, const std::string& host) {
  FileText chain_file = read_file(tls_dir + "/" + kLeafCertName, "tls/edge.pem in the state directory");
  FileText key_file = read_file(tls_dir + "/" + kLeafKeyName, "tls/edge.key in the state directory");
  Wipe wipe{key_file.data};
  if (!chain_file.exists || !key_file.exists || (key_file.mode & 077) != 0) return false;

  std::vector<CertPtr> chain = parse_certificates(chain_file.data);
  if (chain.size() != 2 || X509_cmp(chain[1].get(), ca.cert.get()) != 0) return false;
  X509* leaf = chain[0].get();
  if (!verifies_against(leaf, ca.cert.get())) return false;
  if (!has_exactly_names(leaf, expected_names(host))) return false;

  time_t renew_at = std::time(nullptr) + kRenewDays * 24 * 3600;
  if (X509_cmp_time(X509_get0_notAfter(leaf), &renew_at) <= 0) return false;

  KeyPtr key = parse_private_key(key_file.data);
  bool matches = key && X509_check_private_key(leaf, key.get()) == 1;
  ERR_clear_error();
  return matches;
}

void issue_leaf(const std::string& tls_dir, const Authority& ca, const std::string& host) {
  KeyPtr key = new_p256_key();
  CertPtr leaf = make_leaf_certificate(key.get(), host, ca.cert.get(), ca.key.get());
  std::string key_text = private_key_pem(key.get());
  Wipe wipe{key_text};
  // Key first: a crash in between leaves a key that does not match the chain, which the next start
  // notices and reissues.
  write_atomically(tls_dir, kLeafKeyName, key_text, 0600);
  write_atomically(tls_dir, kLeafCertName,
                   certificate_pem(leaf.get()) + certificate_pem(ca.cert.get()), 0644);
}

}  // namespace

TlsFiles ensure_local_certificates(const std::string& state_dir, const std::string& domain_host) {
  const std::string host = normalise_host(domain_host);
  if (state_dir.empty()) fail("the state directory is not set");
  ensure_private_dir(state_dir);
  const std::string tls_dir = state_dir + "/tls";
  ensure_private_dir(tls_dir);

  Authority ca = load_or_create_authority(state_dir);
  if (!leaf_is_current(tls_dir, ca, host)) issue_leaf(tls_dir, ca, host);
  return TlsFiles{tls_dir + "/" + kLeafCertName, tls_dir + "/" + kLeafKeyName};
}

void check_certificate_files(const TlsFiles& files) {
  if (files.chain_path.empty()) fail("tls_cert is not set");
  if (files.key_path.empty()) fail("tls_key is not set");

  FileText chain_file = read_file(files.chain_path, "tls_cert");
  if (!chain_file.exists) fail("tls_cert: the file does not exist");
  std::vector<CertPtr> chain = parse_certificates(chain_file.data);
  if (chain.empty()) fail("tls_cert: the file holds no PEM certificate");

  FileText key_file = read_file(files.key_path, "tls_key");
  Wipe wipe{key_file.data};
  if (!key_file.exists) fail("tls_key: the file does not exist");
  KeyPtr key = parse_private_key(key_file.data);
  if (!key) fail("tls_key: the file holds no unencrypted PEM private key");
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    fail("tls_key does not match the first certificate in tls_cert");
  }
  ERR_clear_error();
}

}  // namespace cove::shim::edge
