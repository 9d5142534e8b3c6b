#include "edge/certificates.hpp"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../store/scratch_dir.hpp"

namespace cove::shim::edge {
namespace {

using test::ScratchDir;

template <auto Free>
struct Freer {
  template <class T>
  void operator()(T* p) const { Free(p); }
};
using BioPtr = std::unique_ptr<BIO, Freer<BIO_free_all>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Freer<X509_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Freer<X509_EXTENSION_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Freer<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Freer<X509_STORE_CTX_free>>;
struct CertStackFree {  // sk_X509_free is a macro, not a function
  void operator()(STACK_OF(X509) * stack) const { sk_X509_free(stack); }
};
using CertStackPtr = std::unique_ptr<STACK_OF(X509), CertStackFree>;
using BasicConstraintsPtr = std::unique_ptr<BASIC_CONSTRAINTS, Freer<BASIC_CONSTRAINTS_free>>;
using Asn1StringPtr = std::unique_ptr<ASN1_BIT_STRING, Freer<ASN1_BIT_STRING_free>>;
using EkuPtr = std::unique_ptr<EXTENDED_KEY_USAGE, Freer<EXTENDED_KEY_USAGE_free>>;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good());
}

std::vector<CertPtr> load_certs(const std::string& path) {
  std::string text = read_text(path);
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  std::vector<CertPtr> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) certs.emplace_back(cert);
  ERR_clear_error();
  return certs;
}

KeyPtr load_key(const std::string& path) {
  std::string text = read_text(path);
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return key;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Identity of a file on disk: a rewrite (even with the same bytes) changes the inode (rename) and mtime.
struct FileStamp {
  ino_t inode = 0;
  timespec mtime{};
  std::string bytes;
  bool operator==(const FileStamp& o) const {
    return inode == o.inode && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec &&
           bytes == o.bytes;
  }
};

FileStamp stamp(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return FileStamp{st.st_ino, st.st_mtim, read_text(path)};
}

// X509_verify_cert as a TLS client would run it: ca.pem as the only trust root, the rest of the
// chain file as untrusted intermediates, purpose sslserver.
int verify_chain(const std::vector<CertPtr>& chain, X509* root) {
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  CertStackPtr untrusted(sk_X509_new_null());
  for (size_t i = 1; i < chain.size(); ++i) sk_X509_push(untrusted.get(), chain[i].get());
  EXPECT_EQ(X509_STORE_add_cert(store.get(), root), 1);
  EXPECT_EQ(X509_STORE_CTX_init(ctx.get(), store.get(), chain[0].get(), untrusted.get()), 1);
  EXPECT_EQ(X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER), 1);
  int ok = X509_verify_cert(ctx.get());
  int error = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  return ok == 1 ? X509_V_OK : (error == X509_V_OK ? -1 : error);
}

bool host_matches(X509* cert, const std::string& host) {
  return X509_check_host(cert, host.c_str(), host.size(), 0, nullptr) == 1;
}

std::string common_name(X509* cert) {
  char buffer[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buffer, sizeof buffer);
  return buffer;
}

long days_valid(X509* cert) {
  int days = 0, seconds = 0;
  EXPECT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert), X509_get0_notAfter(cert)), 1);
  return days;
}

bool is_p256(EVP_PKEY* key) {
  char group[64] = {};
  size_t len = 0;
  return EVP_PKEY_get_group_name(key, group, sizeof group, &len) == 1 &&
         std::string(group) == "prime256v1";
}

bool extension_is_critical(X509* cert, int nid) {
  int index = X509_get_ext_by_NID(cert, nid, -1);
  return index >= 0 && X509_EXTENSION_get_critical(X509_get_ext(cert, index)) == 1;
}

// ---- building certificates the way a tampering or stale state would look ----

KeyPtr new_key() { return KeyPtr(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")); }

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  ASSERT_TRUE(ext);
  ASSERT_EQ(X509_add_ext(cert, ext.get(), -1), 1);
}

// valid from now+from_seconds to now+to_seconds; issuer == nullptr makes a self-signed CA.
CertPtr make_cert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                  long from_seconds, long to_seconds, const std::string& sans) {
  CertPtr cert(X509_new());
  EXPECT_EQ(X509_set_version(cert.get(), X509_VERSION_3), 1);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), std::time(nullptr));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), from_seconds);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), to_seconds);
  X509_set_pubkey(cert.get(), key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* issuer_cert = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer_cert));
  if (issuer == nullptr) {
    add_ext(cert.get(), issuer_cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
    add_ext(cert.get(), issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_ext(cert.get(), issuer_cert, NID_subject_key_identifier, "hash");
  } else {
    add_ext(cert.get(), issuer_cert, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(cert.get(), issuer_cert, NID_key_usage, "critical,digitalSignature");
    add_ext(cert.get(), issuer_cert, NID_ext_key_usage, "serverAuth");
    add_ext(cert.get(), issuer_cert, NID_subject_key_identifier, "hash");
    add_ext(cert.get(), issuer_cert, NID_authority_key_identifier, "keyid:always");
    if (!sans.empty()) add_ext(cert.get(), issuer_cert, NID_subject_alt_name, sans);
  }
  EXPECT_GT(X509_sign(cert.get(), issuer_key, EVP_sha256()), 0);
  return cert;
}

std::string pem_of(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  EXPECT_EQ(PEM_write_bio_X509(bio.get(), cert), 1);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

std::string pem_of(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  EXPECT_EQ(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

constexpr const char* kSans = "DNS:*.cove.localhost,DNS:cove.localhost,DNS:api.cove.localhost";
constexpr long kDay = 24 * 3600;

class LocalCertificates : public ::testing::Test {
 protected:
  std::string ca_pem() const { return dir / "ca.pem"; }
  std::string ca_key() const { return dir / "ca.key"; }
  std::string edge_pem() const { return dir / "tls/edge.pem"; }
  std::string edge_key() const { return dir / "tls/edge.key"; }

  // Replaces the leaf with one this test built (signed by `issuer`), as a stale state would be.
  void plant_leaf(X509* issuer, EVP_PKEY* issuer_key, long from_seconds, long to_seconds,
                  const std::string& sans) {
    KeyPtr key = new_key();
    CertPtr leaf = make_cert(key.get(), "cove.localhost", issuer, issuer_key, from_seconds,
                             to_seconds, sans);
    write_text(edge_key(), pem_of(key.get()));
    ASSERT_EQ(::chmod(edge_key().c_str(), 0600), 0);
    write_text(edge_pem(), pem_of(leaf.get()) + pem_of(load_certs(ca_pem()).at(0).get()));
  }

  // Plants a leaf signed by the real local CA; returns whether ensure_local_certificates replaced it.
  bool planted_leaf_is_reissued(long from_seconds, long to_seconds, const std::string& sans) {
    CertPtr ca = std::move(load_certs(ca_pem()).at(0));
    KeyPtr key = load_key(ca_key());
    plant_leaf(ca.get(), key.get(), from_seconds, to_seconds, sans);
    const std::string planted = read_text(edge_pem());
    FileStamp ca_before = stamp(ca_pem());
    ensure_local_certificates(dir.path(), "cove.localhost");
    EXPECT_EQ(stamp(ca_pem()), ca_before);
    return read_text(edge_pem()) != planted;
  }

  ScratchDir dir;
};

TEST_F(LocalCertificates, CreatesCaAndLeafWithTheRightModes) {
  TlsFiles files = ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_EQ(files.chain_path, edge_pem());
  EXPECT_EQ(files.key_path, edge_key());
  EXPECT_EQ(mode_of(ca_pem()), 0644u);
  EXPECT_EQ(mode_of(ca_key()), 0600u);
  EXPECT_EQ(mode_of(edge_key()), 0600u);
  EXPECT_EQ(mode_of(edge_pem()) & 022, 0u);
}

TEST_F(LocalCertificates, LeafVerifiesAgainstTheCaAndCoversTheDomain) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  std::vector<CertPtr> roots = load_certs(ca_pem());
  std::vector<CertPtr> chain = load_certs(edge_pem());
  ASSERT_EQ(roots.size(), 1u);
  ASSERT_EQ(chain.size(), 2u);  // leaf, then the CA
  EXPECT_EQ(X509_cmp(chain[1].get(), roots[0].get()), 0);
  EXPECT_EQ(verify_chain(chain, roots[0].get()), X509_V_OK);

  X509* leaf = chain[0].get();
  EXPECT_TRUE(host_matches(leaf, "49983-abc123.cove.localhost"));
  EXPECT_TRUE(host_matches(leaf, "api.cove.localhost"));
  EXPECT_TRUE(host_matches(leaf, "cove.localhost"));
  EXPECT_FALSE(host_matches(leaf, "a.b.cove.localhost"));
  EXPECT_FALSE(host_matches(leaf, "other.localhost"));
  EXPECT_FALSE(host_matches(leaf, "cove.localhost.evil"));

  KeyPtr key = load_key(edge_key());
  ASSERT_TRUE(key);
  EXPECT_EQ(X509_check_private_key(leaf, key.get()), 1);
}

TEST_F(LocalCertificates, CaAndLeafHaveTheRequiredProperties) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  CertPtr ca = std::move(load_certs(ca_pem()).at(0));
  CertPtr leaf = std::move(load_certs(edge_pem()).at(0));

  EXPECT_EQ(common_name(ca.get()).rfind("Cove local CA ", 0), 0u) << common_name(ca.get());
  EXPECT_GT(common_name(ca.get()).size(), std::string("Cove local CA ").size());
  EXPECT_TRUE(is_p256(X509_get0_pubkey(ca.get())));
  EXPECT_GE(days_valid(ca.get()), 3640);
  EXPECT_LE(days_valid(ca.get()), 3660);
  EXPECT_TRUE(extension_is_critical(ca.get(), NID_basic_constraints));
  BasicConstraintsPtr ca_bc(static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(ca.get(), NID_basic_constraints, nullptr, nullptr)));
  ASSERT_TRUE(ca_bc);
  EXPECT_TRUE(ca_bc->ca);
  ASSERT_NE(ca_bc->pathlen, nullptr);
  EXPECT_EQ(ASN1_INTEGER_get(ca_bc->pathlen), 0);
  EXPECT_TRUE(X509_get_key_usage(ca.get()) & KU_KEY_CERT_SIGN);
  EXPECT_NE(X509_get0_subject_key_id(ca.get()), nullptr);

  EXPECT_TRUE(is_p256(X509_get0_pubkey(leaf.get())));
  EXPECT_EQ(days_valid(leaf.get()), 397);
  BasicConstraintsPtr leaf_bc(static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(leaf.get(), NID_basic_constraints, nullptr, nullptr)));
  ASSERT_TRUE(leaf_bc);
  EXPECT_FALSE(leaf_bc->ca);
  EXPECT_EQ(X509_get_key_usage(leaf.get()), static_cast<uint32_t>(KU_DIGITAL_SIGNATURE));
  EXPECT_EQ(X509_get_extended_key_usage(leaf.get()), static_cast<uint32_t>(XKU_SSL_SERVER));
  EXPECT_NE(X509_get0_subject_key_id(leaf.get()), nullptr);
  const ASN1_OCTET_STRING* aki = X509_get0_authority_key_id(leaf.get());
  ASSERT_NE(aki, nullptr);
  EXPECT_EQ(ASN1_OCTET_STRING_cmp(aki, X509_get0_subject_key_id(ca.get())), 0);
  EXPECT_EQ(ASN1_STRING_length(X509_get0_serialNumber(leaf.get())), 16);
  EXPECT_EQ(ASN1_STRING_type(X509_get0_serialNumber(leaf.get())), V_ASN1_INTEGER);  // positive
}

TEST_F(LocalCertificates, SecondCallChangesNothing) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  FileStamp files[] = {stamp(ca_pem()), stamp(ca_key()), stamp(edge_pem()), stamp(edge_key())};
  TlsFiles again = ensure_local_certificates(dir.path(), "Cove.LocalHost");  // lowercased: same host
  EXPECT_EQ(again.chain_path, edge_pem());
  EXPECT_EQ(stamp(ca_pem()), files[0]);
  EXPECT_EQ(stamp(ca_key()), files[1]);
  EXPECT_EQ(stamp(edge_pem()), files[2]);
  EXPECT_EQ(stamp(edge_key()), files[3]);
}

TEST_F(LocalCertificates, NewDomainReissuesTheLeafButKeepsTheCa) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  FileStamp ca_cert = stamp(ca_pem());
  FileStamp ca_private = stamp(ca_key());
  std::string old_leaf = read_text(edge_pem());

  ensure_local_certificates(dir.path(), "dev.example.test");
  EXPECT_EQ(stamp(ca_pem()), ca_cert);
  EXPECT_EQ(stamp(ca_key()), ca_private);
  EXPECT_NE(read_text(edge_pem()), old_leaf);

  std::vector<CertPtr> chain = load_certs(edge_pem());
  ASSERT_EQ(chain.size(), 2u);
  CertPtr root = std::move(load_certs(ca_pem()).at(0));
  EXPECT_EQ(verify_chain(chain, root.get()), X509_V_OK);
  EXPECT_TRUE(host_matches(chain[0].get(), "49983-abc.dev.example.test"));
  EXPECT_TRUE(host_matches(chain[0].get(), "api.dev.example.test"));
  EXPECT_FALSE(host_matches(chain[0].get(), "api.cove.localhost"));
}

TEST_F(LocalCertificates, UppercaseDomainIsLowercased) {
  ensure_local_certificates(dir.path(), "COVE.Localhost");
  CertPtr leaf = std::move(load_certs(edge_pem()).at(0));
  GENERAL_NAMES* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(leaf.get(), NID_subject_alt_name, nullptr, nullptr));
  ASSERT_NE(names, nullptr);
  std::vector<std::string> found;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    ASSERT_EQ(name->type, GEN_DNS);
    found.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(name->d.dNSName)),
                       ASN1_STRING_length(name->d.dNSName));
  }
  GENERAL_NAMES_free(names);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<std::string>{"*.cove.localhost", "api.cove.localhost", "cove.localhost"}));
}

TEST_F(LocalCertificates, RejectsInvalidHostNames) {
  for (const char* bad : {"", "cove.localhost:8443", "localhost", "-a.cove.localhost", "a-.cove",
                          "a..b", ".cove.localhost", "cove.localhost.", "co_ve.localhost",
                          "cove localhost", "127.0.0.1", "*.cove.localhost", "café.localhost",
                          "cove.localhost/x", "a,DNS:evil.com.localhost"}) {
    EXPECT_THROW(ensure_local_certificates(dir.path(), bad), CertificateError) << bad;
  }
  EXPECT_THROW(ensure_local_certificates(dir.path(), std::string(64, 'a') + ".localhost"),
               CertificateError);
  EXPECT_THROW(ensure_local_certificates(dir.path(), std::string(250, 'a')), CertificateError);
  // Nothing was created for a bad name.
  EXPECT_NE(::access(ca_pem().c_str(), F_OK), 0);
  // Boundaries that are fine: a 63-character label, digits inside, hyphens inside.
  EXPECT_NO_THROW(ensure_local_certificates(dir.path(), std::string(63, 'a') + ".localhost"));
  EXPECT_NO_THROW(ensure_local_certificates(dir.path(), "my-dev1.box2.test"));
}

TEST_F(LocalCertificates, EmptyStateDirIsAnError) {
  EXPECT_THROW(ensure_local_certificates("", "cove.localhost"), CertificateError);
}

TEST_F(LocalCertificates, PlantedValidLeafIsKept) {
  // The control for the reissue tests below: a leaf with the right names, from the CA, 60 days left.
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_FALSE(planted_leaf_is_reissued(-kDay, 60 * kDay, kSans));
}

TEST_F(LocalCertificates, LeafExpiringWithinThirtyDaysIsReissued) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_TRUE(planted_leaf_is_reissued(-kDay, 10 * kDay, kSans));
  CertPtr leaf = std::move(load_certs(edge_pem()).at(0));
  time_t in_a_year = std::time(nullptr) + 390 * kDay;
  EXPECT_GT(X509_cmp_time(X509_get0_notAfter(leaf.get()), &in_a_year), 0);
}

TEST_F(LocalCertificates, ExpiredLeafIsReissued) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_TRUE(planted_leaf_is_reissued(-20 * kDay, -kDay, kSans));
}

TEST_F(LocalCertificates, LeafWithOtherNamesIsReissued) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_TRUE(planted_leaf_is_reissued(-kDay, 60 * kDay, std::string(kSans) + ",DNS:evil.test"));
  EXPECT_TRUE(planted_leaf_is_reissued(-kDay, 60 * kDay, "DNS:*.cove.localhost,DNS:cove.localhost"));
  EXPECT_TRUE(planted_leaf_is_reissued(
      -kDay, 60 * kDay, std::string(kSans) + ",IP:127.0.0.1"));
  EXPECT_TRUE(planted_leaf_is_reissued(-kDay, 60 * kDay, ""));
}

TEST_F(LocalCertificates, LeafFromAnotherCaIsReissued) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  // Same subject name as the real CA, different key: only the signature tells them apart.
  CertPtr real_ca = std::move(load_certs(ca_pem()).at(0));
  KeyPtr other_key = new_key();
  CertPtr other_ca = make_cert(other_key.get(), common_name(real_ca.get()), nullptr, other_key.get(),
                               -kDay, 100 * kDay, "");
  plant_leaf(other_ca.get(), other_key.get(), -kDay, 60 * kDay, kSans);
  const std::string planted = read_text(edge_pem());
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_NE(read_text(edge_pem()), planted);
  std::vector<CertPtr> chain = load_certs(edge_pem());
  EXPECT_EQ(verify_chain(chain, real_ca.get()), X509_V_OK);
}

TEST_F(LocalCertificates, DamagedLeafFilesAreReissued) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  std::string good_chain = read_text(edge_pem());

  write_text(edge_pem(), "garbage");
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_EQ(load_certs(edge_pem()).size(), 2u);

  // A key that does not belong to the leaf.
  write_text(edge_key(), pem_of(new_key().get()));
  std::string chain_before = read_text(edge_pem());
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_NE(read_text(edge_pem()), chain_before);
  EXPECT_EQ(X509_check_private_key(load_certs(edge_pem()).at(0).get(), load_key(edge_key()).get()), 1);

  // A key that became world-readable is replaced by a fresh private one.
  ASSERT_EQ(::chmod(edge_key().c_str(), 0644), 0);
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_EQ(mode_of(edge_key()), 0600u);

  ASSERT_EQ(::unlink(edge_key().c_str()), 0);
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_EQ(mode_of(edge_key()), 0600u);
  EXPECT_EQ(X509_check_private_key(load_certs(edge_pem()).at(0).get(), load_key(edge_key()).get()), 1);
}

TEST_F(LocalCertificates, CorruptCaKeyIsAClearErrorAndTheCaIsKept) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  FileStamp ca_cert = stamp(ca_pem());
  write_text(ca_key(), "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n");
  try {
    ensure_local_certificates(dir.path(), "cove.localhost");
    FAIL() << "a corrupt ca.key was accepted";
  } catch (const CertificateError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("ca.key"), std::string::npos) << what;
    EXPECT_EQ(what.find(dir.path()), std::string::npos) << "the message names a host path: " << what;
  }
  EXPECT_EQ(stamp(ca_pem()), ca_cert);
  EXPECT_EQ(ERR_peek_error(), 0u);  // no stale OpenSSL errors left for the next TLS call
}

TEST_F(LocalCertificates, CaKeyThatDoesNotMatchIsAnError) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  FileStamp ca_cert = stamp(ca_pem());
  write_text(ca_key(), pem_of(new_key().get()));
  EXPECT_THROW(ensure_local_certificates(dir.path(), "cove.localhost"), CertificateError);
  EXPECT_EQ(stamp(ca_pem()), ca_cert);
}

TEST_F(LocalCertificates, MissingCaKeyIsAnError) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  ASSERT_EQ(::unlink(ca_key().c_str()), 0);
  EXPECT_THROW(ensure_local_certificates(dir.path(), "cove.localhost"), CertificateError);
  EXPECT_NE(::access(ca_key().c_str(), F_OK), 0);
}

TEST_F(LocalCertificates, WorldReadableCaKeyIsRefused) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  ASSERT_EQ(::chmod(ca_key().c_str(), 0644), 0);
  EXPECT_THROW(ensure_local_certificates(dir.path(), "cove.localhost"), CertificateError);
}

TEST_F(LocalCertificates, CorruptCaCertificateIsAnError) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  write_text(ca_pem(), "not a certificate\n");
  EXPECT_THROW(ensure_local_certificates(dir.path(), "cove.localhost"), CertificateError);
  EXPECT_EQ(read_text(ca_pem()), "not a certificate\n");
}

TEST_F(LocalCertificates, KeyWithoutCaCertificateIsReplaced) {
  // A crash between writing ca.key and ca.pem: no client can trust that CA yet, so start afresh.
  ensure_local_certificates(dir.path(), "cove.localhost");
  std::string old_key = read_text(ca_key());
  ASSERT_EQ(::unlink(ca_pem().c_str()), 0);
  ensure_local_certificates(dir.path(), "cove.localhost");
  EXPECT_NE(read_text(ca_key()), old_key);
  std::vector<CertPtr> chain = load_certs(edge_pem());
  CertPtr root = std::move(load_certs(ca_pem()).at(0));
  EXPECT_EQ(verify_chain(chain, root.get()), X509_V_OK);
}

TEST_F(LocalCertificates, CreatesMissingStateDirectoryPrivately) {
  std::string nested = dir / "a/b";
  ensure_local_certificates(nested, "cove.localhost");
  EXPECT_EQ(mode_of(nested), 0700u);
  EXPECT_EQ(mode_of(nested + "/tls"), 0700u);
  EXPECT_EQ(mode_of(nested + "/ca.key"), 0600u);
}

TEST_F(LocalCertificates, LeavesNoTemporaryFiles) {
  ensure_local_certificates(dir.path(), "cove.localhost");
  ensure_local_certificates(dir.path(), "other.localhost");
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    names.push_back(entry.path().lexically_relative(dir.path()).string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ca.key", "ca.pem", "tls", "tls/edge.key", "tls/edge.pem"}));
}

// ---- operator files ----

class OperatorCertificates : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_key = new_key();
    ca = make_cert(ca_key.get(), "Operator CA", nullptr, ca_key.get(), -kDay, 100 * kDay, "");
    leaf_key = new_key();
    leaf = make_cert(leaf_key.get(), "cove.example.com", ca.get(), ca_key.get(), -kDay, 90 * kDay,
                     "DNS:*.cove.example.com");
    write_text(dir / "chain.pem", pem_of(leaf.get()) + pem_of(ca.get()));
    write_text(dir / "key.pem", pem_of(leaf_key.get()));
  }
  TlsFiles files() const { return TlsFiles{dir / "chain.pem", dir / "key.pem"}; }

  // The message names the config key and never the path.
  std::string error_of(const TlsFiles& f) {
    try {
      check_certificate_files(f);
    } catch (const CertificateError& e) {
      std::string what = e.what();
      EXPECT_EQ(what.find(dir.path()), std::string::npos) << what;
      EXPECT_EQ(what.find("BEGIN"), std::string::npos) << what;
      return what;
    }
    return "";
  }

  ScratchDir dir;
  KeyPtr ca_key, leaf_key;
  CertPtr ca, leaf;
};

TEST_F(OperatorCertificates, MatchingFilesPass) {
  EXPECT_NO_THROW(check_certificate_files(files()));
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST_F(OperatorCertificates, MissingCertificateNamesTlsCert) {
  TlsFiles f = files();
  f.chain_path = dir / "nope.pem";
  EXPECT_NE(error_of(f).find("tls_cert"), std::string::npos);
  f.chain_path = "";
  EXPECT_NE(error_of(f).find("tls_cert"), std::string::npos);
}

TEST_F(OperatorCertificates, GarbageCertificateNamesTlsCert) {
  write_text(dir / "chain.pem", "hello");
  EXPECT_NE(error_of(files()).find("tls_cert"), std::string::npos);
  // A directory is not a certificate file either.
  TlsFiles f = files();
  f.chain_path = dir.path();
  EXPECT_NE(error_of(f).find("tls_cert"), std::string::npos);
}

TEST_F(OperatorCertificates, MissingOrGarbageKeyNamesTlsKey) {
  TlsFiles f = files();
  f.key_path = dir / "nope.key";
  EXPECT_NE(error_of(f).find("tls_key"), std::string::npos);
  write_text(dir / "key.pem", "hello");
  EXPECT_NE(error_of(files()).find("tls_key"), std::string::npos);
}

TEST_F(OperatorCertificates, KeyOfAnotherCertificateNamesTlsKey) {
  // The CA's key matches the second certificate in the chain, not the first: still a mismatch.
  write_text(dir / "key.pem", pem_of(ca_key.get()));
  EXPECT_NE(error_of(files()).find("tls_key"), std::string::npos);
}

TEST_F(OperatorCertificates, EncryptedKeyIsAnErrorNotAPrompt) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  const char* pass = "secret";
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(bio.get(), leaf_key.get(), EVP_aes_256_cbc(), nullptr, 0,
                                          nullptr, const_cast<char*>(pass)),
            1);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  write_text(dir / "key.pem", std::string(data, static_cast<size_t>(len)));
  EXPECT_NE(error_of(files()).find("tls_key"), std::string::npos);
}

}  // namespace
}  // namespace cove::shim::edge
