#include "edge/tls_context.hpp"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../store/scratch_dir.hpp"
#include "edge/certificates.hpp"

namespace cove::shim::edge {
namespace {

namespace asio = boost::asio;
using test::ScratchDir;

template <auto Free>
struct Freer {
  template <class T>
  void operator()(T* p) const { Free(p); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, Freer<SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, Freer<SSL_free>>;

constexpr const char* kSandboxHost = "49983-abc123.cove.localhost";

// ALPN wire format: each name prefixed by its length.
std::string alpn_wire(const std::vector<std::string>& protocols) {
  std::string wire;
  for (const std::string& p : protocols) {
    wire.push_back(static_cast<char>(p.size()));
    wire += p;
  }
  return wire;
}

// A client that trusts only `ca_file` and checks the server name, as Node does with `ca:`.
SslCtxPtr client_context(const std::string& ca_file) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  EXPECT_TRUE(ctx);
  EXPECT_EQ(SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr), 1);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  return ctx;
}

struct Outcome {
  bool ok = false;
  long verify_result = -1;
  std::string server_protocol;  // negotiated_protocol() on each end
  std::string client_protocol;
  unsigned long server_error = 0;
};

// Drives both ends of a handshake over an in-memory BIO pair until both finish or one fails.
Outcome handshake(SSL_CTX* server_ctx, SSL_CTX* client_ctx, const std::vector<std::string>& alpn,
                  const std::string& server_name = kSandboxHost) {
  ERR_clear_error();
  SslPtr server(SSL_new(server_ctx));
  SslPtr client(SSL_new(client_ctx));
  BIO* client_bio = nullptr;
  BIO* server_bio = nullptr;
  EXPECT_EQ(BIO_new_bio_pair(&client_bio, 0, &server_bio, 0), 1);
  SSL_set_bio(client.get(), client_bio, client_bio);
  SSL_set_bio(server.get(), server_bio, server_bio);
  SSL_set_connect_state(client.get());
  SSL_set_accept_state(server.get());
  EXPECT_EQ(SSL_set_tlsext_host_name(client.get(), server_name.c_str()), 1);
  EXPECT_EQ(SSL_set1_host(client.get(), server_name.c_str()), 1);
  if (!alpn.empty()) {
    std::string wire = alpn_wire(alpn);
    // 0 is success for this one call.
    EXPECT_EQ(SSL_set_alpn_protos(client.get(), reinterpret_cast<const unsigned char*>(wire.data()),
                                  static_cast<unsigned>(wire.size())),
              0);
  }

  Outcome out;
  bool client_done = false, server_done = false;
  for (int round = 0; round < 50 && !(client_done && server_done); ++round) {
    if (!client_done) {
      int rc = SSL_do_handshake(client.get());
      int err = SSL_get_error(client.get(), rc);
      if (rc == 1) client_done = true;
      else if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) break;
    }
    if (!server_done) {
      int rc = SSL_do_handshake(server.get());
      int err = SSL_get_error(server.get(), rc);
      if (rc == 1) {
        server_done = true;
      } else if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        out.server_error = ERR_peek_last_error();
        break;
      }
    }
  }
  out.ok = client_done && server_done;
  out.verify_result = SSL_get_verify_result(client.get());
  out.server_protocol = negotiated_protocol(server.get());
  out.client_protocol = negotiated_protocol(client.get());
  ERR_clear_error();
  return out;
}

class TlsContext : public ::testing::Test {
 protected:
  void SetUp() override { files = ensure_local_certificates(dir.path(), "cove.localhost"); }
  std::string ca_file() const { return dir / "ca.pem"; }

  ScratchDir dir;
  TlsFiles files;
};

TEST_F(TlsContext, PrefersH2WhenOffered) {
  auto server = make_tls_context(files, true);
  SslCtxPtr client = client_context(ca_file());
  Outcome out = handshake(server->native_handle(), client.get(), {"h2", "http/1.1"});
  ASSERT_TRUE(out.ok);
  EXPECT_EQ(out.verify_result, X509_V_OK);
  EXPECT_EQ(out.server_protocol, "h2");
  EXPECT_EQ(out.client_protocol, "h2");
  // The client's order does not matter: the server prefers h2.
  out = handshake(server->native_handle(), client.get(), {"http/1.1", "h2"});
  ASSERT_TRUE(out.ok);
  EXPECT_EQ(out.server_protocol, "h2");
}

TEST_F(TlsContext, Http11WhenH2IsOff) {
  auto server = make_tls_context(files, false);
  SslCtxPtr client = client_context(ca_file());
  Outcome out = handshake(server->native_handle(), client.get(), {"h2", "http/1.1"});
  ASSERT_TRUE(out.ok);
  EXPECT_EQ(out.verify_result, X509_V_OK);
  EXPECT_EQ(out.server_protocol, "http/1.1");
  EXPECT_EQ(out.client_protocol, "http/1.1");
}

TEST_F(TlsContext, Http11OnlyClientGetsHttp11) {
  auto server = make_tls_context(files, true);
  SslCtxPtr client = client_context(ca_file());
  Outcome out = handshake(server->native_handle(), client.get(), {"http/1.1"});
  ASSERT_TRUE(out.ok);
  EXPECT_EQ(out.server_protocol, "http/1.1");
  EXPECT_EQ(out.client_protocol, "http/1.1");
}

TEST_F(TlsContext, ClientWithoutAlpnIsAccepted) {
  auto server = make_tls_context(files, true);
  SslCtxPtr client = client_context(ca_file());
  Outcome out = handshake(server->native_handle(), client.get(), {});
  ASSERT_TRUE(out.ok);
  EXPECT_EQ(out.verify_result, X509_V_OK);
  EXPECT_EQ(out.server_protocol, "");
  EXPECT_EQ(out.client_protocol, "");
}

TEST_F(TlsContext, UnknownProtocolsOnlyProceedWithoutAlpn) {
  auto server = make_tls_context(files, true);
  SslCtxPtr client = client_context(ca_file());
  Outcome out = handshake(server->native_handle(), client.get(), {"spdy/3", "h3"});
  ASSERT_TRUE(out.ok);
  EXPECT_EQ(out.server_protocol, "");
  EXPECT_EQ(out.client_protocol, "");
  // h2 alone, with h2 off: no answer rather than an alert.
  auto http11_only = make_tls_context(files, false);
  out = handshake(http11_only->native_handle(), client.get(), {"h2"});
  ASSERT_TRUE(out.ok);
  EXPECT_EQ(out.server_protocol, "");
}

TEST_F(TlsContext, ServesApiAndBareDomainNames) {
  auto server = make_tls_context(files, true);
  SslCtxPtr client = client_context(ca_file());
  for (const char* name : {"api.cove.localhost", "cove.localhost", "sandbox.cove.localhost"}) {
    Outcome out = handshake(server->native_handle(), client.get(), {"h2"}, name);
    EXPECT_TRUE(out.ok) << name;
    EXPECT_EQ(out.verify_result, X509_V_OK) << name;
  }
}

TEST_F(TlsContext, ClientRejectsAWrongNameOrAnotherCa) {
  // The controls that show the verification above is real.
  auto server = make_tls_context(files, true);
  SslCtxPtr client = client_context(ca_file());
  Outcome wrong_name = handshake(server->native_handle(), client.get(), {"h2"}, "a.b.cove.localhost");
  EXPECT_FALSE(wrong_name.ok);
  EXPECT_EQ(wrong_name.verify_result, X509_V_ERR_HOSTNAME_MISMATCH);

  ScratchDir other;
  ensure_local_certificates(other.path(), "cove.localhost");
  SslCtxPtr other_client = client_context(other / "ca.pem");
  Outcome other_ca = handshake(server->native_handle(), other_client.get(), {"h2"});
  EXPECT_FALSE(other_ca.ok);
  EXPECT_NE(other_ca.verify_result, X509_V_OK);
}

TEST_F(TlsContext, Tls12IsTheFloor) {
  auto server = make_tls_context(files, true);
  EXPECT_EQ(SSL_CTX_get_min_proto_version(server->native_handle()), TLS1_2_VERSION);

  SslCtxPtr tls12 = client_context(ca_file());
  SSL_CTX_set_max_proto_version(tls12.get(), TLS1_2_VERSION);
  Outcome out = handshake(server->native_handle(), tls12.get(), {"h2", "http/1.1"});
  ASSERT_TRUE(out.ok);
  EXPECT_EQ(out.server_protocol, "h2");

  SslCtxPtr tls11 = client_context(ca_file());
  SSL_CTX_set_security_level(tls11.get(), 0);  // so the client itself is willing to try 1.1
  SSL_CTX_set_min_proto_version(tls11.get(), TLS1_VERSION);
  SSL_CTX_set_max_proto_version(tls11.get(), TLS1_1_VERSION);
  SSL_CTX_set_cipher_list(tls11.get(), "ALL:@SECLEVEL=0");
  out = handshake(server->native_handle(), tls11.get(), {"http/1.1"});
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(ERR_GET_REASON(out.server_error), SSL_R_UNSUPPORTED_PROTOCOL);
}

TEST_F(TlsContext, BadFilesAreACertificateError) {
  TlsFiles missing{dir / "none.pem", files.key_path};
  EXPECT_THROW(make_tls_context(missing, true), CertificateError);
  TlsFiles no_key{files.chain_path, dir / "none.key"};
  EXPECT_THROW(make_tls_context(no_key, true), CertificateError);
  TlsFiles mismatched{files.chain_path, dir / "ca.key"};  // a valid key, but the CA's
  EXPECT_THROW(make_tls_context(mismatched, true), CertificateError);
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(NegotiatedProtocol, NullIsEmpty) { EXPECT_EQ(negotiated_protocol(nullptr), ""); }

// The same context through asio's ssl::stream over a socketpair, as the listener will use it.
TEST_F(TlsContext, AsioStreamsNegotiateH2OverASocketPair) {
  asio::io_context io;
  using Socket = asio::local::stream_protocol::socket;
  Socket server_socket(io), client_socket(io);
  asio::local::connect_pair(server_socket, client_socket);

  auto server_ctx = make_tls_context(files, true);
  asio::ssl::context client_ctx(asio::ssl::context::tls_client);
  client_ctx.load_verify_file(ca_file());
  client_ctx.set_verify_mode(asio::ssl::verify_peer);

  asio::ssl::stream<Socket> server(std::move(server_socket), *server_ctx);
  asio::ssl::stream<Socket> client(std::move(client_socket), client_ctx);
  ASSERT_EQ(SSL_set_tlsext_host_name(client.native_handle(), kSandboxHost), 1);
  ASSERT_EQ(SSL_set1_host(client.native_handle(), kSandboxHost), 1);
  std::string wire = alpn_wire({"h2", "http/1.1"});
  ASSERT_EQ(SSL_set_alpn_protos(client.native_handle(),
                                reinterpret_cast<const unsigned char*>(wire.data()),
                                static_cast<unsigned>(wire.size())),
            0);

  boost::system::error_code server_ec = asio::error::would_block;
  boost::system::error_code client_ec = asio::error::would_block;
  server.async_handshake(asio::ssl::stream_base::server,
                         [&](const boost::system::error_code& ec) { server_ec = ec; });
  client.async_handshake(asio::ssl::stream_base::client,
                         [&](const boost::system::error_code& ec) { client_ec = ec; });
  io.run_for(std::chrono::seconds(10));
  ASSERT_FALSE(server_ec) << server_ec.message();
  ASSERT_FALSE(client_ec) << client_ec.message();
  EXPECT_EQ(SSL_get_verify_result(client.native_handle()), X509_V_OK);
  EXPECT_EQ(negotiated_protocol(server.native_handle()), "h2");
  EXPECT_EQ(negotiated_protocol(client.native_handle()), "h2");
}

}  // namespace
}  // namespace cove::shim::edge
