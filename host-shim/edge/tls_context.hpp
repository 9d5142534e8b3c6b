#pragma once
// The TLS edge's server context: protocol floor, certificate chain and key, and ALPN selection
// between HTTP/2 and HTTP/1.1.
#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "edge/certificates.hpp"

namespace cove::shim::edge {

// TLS 1.2 minimum (1.2 with ECDHE and AEAD ciphers only, as HTTP/2 requires); chain + key from the
// files (CertificateError when they do not load or match). ALPN: "h2" when `offer_h2` and the client
// offers it, else "http/1.1" when offered; a client without ALPN is accepted (serve it http/1.1); a
// client offering only unknown protocols gets no ALPN answer (SSL_TLSEXT_ERR_NOACK), not an alert.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const TlsFiles& files, bool offer_h2);

// "h2", "http/1.1", or "" when nothing was negotiated.
std::string negotiated_protocol(const SSL* ssl);

}  // namespace cove::shim::edge
