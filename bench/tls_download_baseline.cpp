// Limit baseline for the edge's large download (bench/edge.sh): the cheapest possible HTTPS server
// on loopback. For each connection: TLS 1.3 with the given certificate, key and cipher suite (ALPN
// http/1.1), read one request head, answer 200 with Content-Length BYTES and BYTES zero bytes in
// 64 KiB SSL_write calls, close. Downloaded with the same curl command as the edge, the figure is
// curl's and OpenSSL's own cost with nothing in between: what the edge is measured against.
// (`openssl s_server` fed by a pipe manages well under 10 % of this: it reads stdin 16 KiB per
// select round and is no ceiling.)
// Usage: cove-bench-tls-download-baseline CERT KEY SUITE BYTES CONNECTIONS
//        prints the port it listens on (127.0.0.1), serves CONNECTIONS connections, exits.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "tls-download-baseline: %s\n", what);
  ERR_print_errors_fp(stderr);
  std::exit(1);
}

int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned inlen,
                  void*) {
  static const unsigned char kProto[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kProto, sizeof kProto, in, inlen) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

// Reads until the end of the request head; false when the client went away first.
bool read_request_head(SSL* ssl) {
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos) {
    int n = SSL_read(ssl, buf, sizeof buf);
    if (n <= 0 || head.size() > 65536) return false;
    head.append(buf, static_cast<size_t>(n));
  }
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) fail("usage: cove-bench-tls-download-baseline CERT KEY SUITE BYTES CONNECTIONS");
  const long long bytes = std::atoll(argv[4]);
  const int connections = std::atoi(argv[5]);
  if (bytes <= 0 || connections <= 0) fail("BYTES and CONNECTIONS must be positive");

  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr || SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, argv[3]) != 1 || SSL_CTX_use_certificate_chain_file(ctx, argv[1]) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, argv[2], SSL_FILETYPE_PEM) != 1) {
    fail("cannot set up the TLS context");
  }
  SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);

  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 16) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    fail("cannot listen on 127.0.0.1");
  }
  std::printf("%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);

  std::vector<char> block(64 * 1024, 0);
  for (int i = 0; i < connections; ++i) {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) fail("accept failed");
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1 && read_request_head(ssl)) {
      std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                         std::to_string(bytes) + "\r\nConnection: close\r\n\r\n";
      bool ok = SSL_write(ssl, head.data(), static_cast<int>(head.size())) > 0;
      for (long long left = bytes; ok && left > 0;) {
        int n = static_cast<int>(left < static_cast<long long>(block.size()) ? left : block.size());
        ok = SSL_write(ssl, block.data(), n) == n;
        left -= n;
      }
      if (ok) SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ::close(fd);
  }
  SSL_CTX_free(ctx);
  return 0;
}
