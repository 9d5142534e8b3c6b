// The floor under files.write / files.read: the same bytes over one keep-alive HTTP/1.1 request on
// loopback to a trivial handler that writes them to a file (open O_TRUNC, write as they arrive,
// close) or reads a file back (open, fstat, send). Run it on the filesystem the agent writes to.
// Prints p50 in milliseconds per case, and MiB/s for one large upload, as JSON.
//
// Usage: cove-bench-files-baseline DIR [RUNS [LARGE_MIB]]    (defaults: 50 runs, 1024 MiB)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kPiece = 64 * 1024;

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) die("write");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Reads until "\r\n\r\n"; returns the header block, leaves any body bytes read past it in `extra`.
bool read_head(int fd, std::string& head, std::string& extra) {
  head.clear();
  char buf[4096];
  for (;;) {
    size_t end = head.find("\r\n\r\n");
    if (end != std::string::npos) {
      extra = head.substr(end + 4);
      head.resize(end + 4);
      return true;
    }
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    head.append(buf, static_cast<size_t>(n));
  }
}

size_t content_length(const std::string& head) {
  auto at = head.find("Content-Length: ");
  return at == std::string::npos ? 0 : std::strtoull(head.c_str() + at + 16, nullptr, 10);
}

// POST <path>: body to the file <dir><path>. GET <path>: the file back.
void serve(int listener, std::string dir) {
  int c = accept(listener, nullptr, nullptr);
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string head, extra;
  std::vector<char> buf(kPiece);
  while (read_head(c, head, extra)) {
    const bool post = head.rfind("POST ", 0) == 0;
    const size_t sp = head.find(' '), sp2 = head.find(' ', sp + 1);
    const std::string path = dir + head.substr(sp + 1, sp2 - sp - 1);
    if (post) {
      int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) die("open for write");
      size_t left = content_length(head);
      write_all(fd, extra.data(), extra.size());
      left -= extra.size();
      while (left > 0) {
        ssize_t n = read(c, buf.data(), std::min(left, buf.size()));
        if (n <= 0) die("read body");
        write_all(fd, buf.data(), static_cast<size_t>(n));
        left -= static_cast<size_t>(n);
      }
      close(fd);
      static const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      write_all(c, ok.data(), ok.size());
    } else {
      int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) die("open for read");
      struct stat st {};
      fstat(fd, &st);
      const std::string h = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(st.st_size) + "\r\n\r\n";
      write_all(c, h.data(), h.size());
      for (ssize_t n; (n = read(fd, buf.data(), buf.size())) > 0;) write_all(c, buf.data(), static_cast<size_t>(n));
      close(fd);
    }
  }
  close(c);
}

double p50(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [RUNS [LARGE_MIB]]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int runs = argc > 2 ? std::atoi(argv[2]) : 50;
  const size_t large_mib = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1024;

  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) die("bind");
  listen(listener, 1);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread server(serve, listener, dir);

  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) die("connect");
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  std::mt19937_64 rng(42);
  std::vector<char> data(4 << 20);
  for (auto& b : data) b = static_cast<char>(rng());

  std::string head, extra;
  std::vector<char> buf(kPiece);
  auto read_response = [&] {
    if (!read_head(c, head, extra)) die("response");
    size_t left = content_length(head) - extra.size();
    while (left > 0) {
      ssize_t n = read(c, buf.data(), std::min(left, buf.size()));
      if (n <= 0) die("response body");
      left -= static_cast<size_t>(n);
    }
  };
  // One POST of `size` bytes, sent in 64 KiB pieces from `data` (repeated for large uploads).
  auto post = [&](const char* path, size_t size) {
    const std::string h = std::string("POST ") + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                          "application/octet-stream\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n";
    write_all(c, h.data(), h.size());
    for (size_t sent = 0; sent < size;) {
      const size_t off = sent % data.size();
      const size_t n = std::min({kPiece, size - sent, data.size() - off});
      write_all(c, data.data() + off, n);
      sent += n;
    }
    read_response();
  };
  auto get = [&](const char* path) {
    const std::string h = std::string("GET ") + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    write_all(c, h.data(), h.size());
    read_response();
  };
  auto time = [&](auto&& fn) {
    std::vector<double> samples;
    for (int i = 0; i < runs + 5; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      fn();
      if (i >= 5) samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return p50(samples);
  };

  const double write_4m = time([&] { post("/baseline-4m.bin", 4 << 20); });
  const double read_4m = time([&] { get("/baseline-4m.bin"); });
  const double write_4k = time([&] { post("/baseline-4k.bin", 4 << 10); });
  const auto t0 = std::chrono::steady_clock::now();
  post("/baseline-large.bin", large_mib << 20);
  const double large_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  shutdown(c, SHUT_WR);
  server.join();
  close(c);
  for (const char* f : {"/baseline-4m.bin", "/baseline-4k.bin", "/baseline-large.bin"}) unlink((dir + f).c_str());
  std::printf(
      "{\"runs\":%d,\"write_4m_p50_ms\":%.3f,\"read_4m_p50_ms\":%.3f,\"write_4k_p50_ms\":%.3f,"
      "\"large_mib\":%zu,\"large_upload_s\":%.3f,\"large_upload_mib_s\":%.1f}\n",
      runs, write_4m, read_4m, write_4k, large_mib, large_s, static_cast<double>(large_mib) / large_s);
  return 0;
}
