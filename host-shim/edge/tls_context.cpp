#include "edge/tls_context.hpp"

#include <openssl/err.h>

#include <string_view>

namespace cove::shim::edge {
namespace {

// Mozilla's "intermediate" TLS 1.2 suites: forward secrecy and AEAD only, which also keeps HTTP/2
// clear of its cipher blocklist (RFC 9113 §9.2.2). TLS 1.3 suites are OpenSSL's defaults.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

constexpr std::string_view kH2 = "h2";
constexpr std::string_view kHttp11 = "http/1.1";

[[noreturn]] void fail(const std::string& message) {
  ERR_clear_error();
  throw CertificateError(message);
}

// Loading a key must never prompt on the terminal; an encrypted key fails to load instead.
int refuse_passphrase(char*, int, int, void*) { return -1; }

// `in` is the client's list of length-prefixed protocol names; the answer points into it.
int select_protocol(const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                    unsigned int inlen, bool offer_h2) {
  const unsigned char* h2 = nullptr;
  const unsigned char* http11 = nullptr;
  for (unsigned int i = 0; i < inlen;) {
    unsigned int len = in[i];
    if (len == 0 || len > inlen - i - 1) return SSL_TLSEXT_ERR_NOACK;  // malformed list
    std::string_view name(reinterpret_cast<const char*>(in + i + 1), len);
    if (name == kH2) h2 = in + i + 1;
    if (name == kHttp11) http11 = in + i + 1;
    i += 1 + len;
  }
  if (offer_h2 && h2 != nullptr) {
    *out = h2;
    *outlen = static_cast<unsigned char>(kH2.size());
    return SSL_TLSEXT_ERR_OK;
  }
  if (http11 != nullptr) {
    *out = http11;
    *outlen = static_cast<unsigned char>(kHttp11.size());
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

int select_h2_or_http11(SSL*, const unsigned char** out, unsigned char* outlen,
                        const unsigned char* in, unsigned int inlen, void*) {
  return select_protocol(out, outlen, in, inlen, true);
}

int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                  unsigned int inlen, void*) {
  return select_protocol(out, outlen, in, inlen, false);
}

}  // namespace

std::shared_ptr<boost::asio::ssl::context> make_tls_context(const TlsFiles& files, bool offer_h2) {
  auto context = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) fail("cannot set the TLS version floor");
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // An idle connection gives its ~34 KiB of record buffers back: the edge holds many idle
  // streams (the SDK's undici opens one connection per concurrent stream).
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) fail("cannot set the TLS 1.2 ciphers");
  // Userdata stays null: asio's context destructor owns (and deletes) a non-null one.
  SSL_CTX_set_default_passwd_cb(ctx, refuse_passphrase);
  if (SSL_CTX_use_certificate_chain_file(ctx, files.chain_path.c_str()) != 1) {
    fail("cannot load the TLS certificate chain");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key_path.c_str(), SSL_FILETYPE_PEM) != 1) {
    fail("cannot load the TLS private key (it must be an unencrypted PEM key)");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) fail("the TLS private key does not match the certificate");
  SSL_CTX_set_alpn_select_cb(ctx, offer_h2 ? select_h2_or_http11 : select_http11, nullptr);
  ERR_clear_error();
  return context;
}

std::string negotiated_protocol(const SSL* ssl) {
  const unsigned char* data = nullptr;
  unsigned int len = 0;
  if (ssl != nullptr) SSL_get0_alpn_selected(ssl, &data, &len);
  if (data == nullptr || len == 0) return {};
  return std::string(reinterpret_cast<const char*>(data), len);
}

}  // namespace cove::shim::edge
