// The floor under `commands.run('true')`: one keep-alive HTTP/1.1 request over loopback to a
// trivial handler plus posix_spawn + wait of a command (default /bin/true). Prints p50/p99 in
// milliseconds as JSON. Usage: cove-bench-baseline [RUNS [COMMAND ARGS...]]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {
constexpr const char* kResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

void serve(int listener) {
  int c = accept(listener, nullptr, nullptr);
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char buf[4096];
  std::string pending;
  for (;;) {
    ssize_t n = read(c, buf, sizeof buf);
    if (n <= 0) break;
    pending.append(buf, n);
    size_t end;
    while ((end = pending.find("\r\n\r\n")) != std::string::npos) {
      pending.erase(0, end + 4);
      if (write(c, kResponse, strlen(kResponse)) < 0) return;
    }
  }
  close(c);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}
}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 500;
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  listen(listener, 1);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread server(serve, listener);

  int c = socket(AF_INET, SOCK_STREAM, 0);
  connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const std::string request = "POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n";
  std::vector<double> samples;
  char buf[256];
  std::vector<char*> spawn_argv;
  for (int i = 2; i < argc; ++i) spawn_argv.push_back(argv[i]);
  if (spawn_argv.empty()) spawn_argv.push_back(const_cast<char*>("/bin/true"));
  spawn_argv.push_back(nullptr);
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (write(c, request.data(), request.size()) < 0) return 1;
    size_t got = 0;
    while (got < strlen(kResponse)) {
      ssize_t n = read(c, buf, sizeof buf);
      if (n <= 0) return 1;
      got += n;
    }
    pid_t pid;
    if (posix_spawn(&pid, spawn_argv[0], nullptr, nullptr, spawn_argv.data(), environ) != 0) return 1;
    int status;
    waitpid(pid, &status, 0);
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  close(c);
  server.join();
  std::printf("{\"runs\":%d,\"p50_ms\":%.3f,\"p99_ms\":%.3f}\n", runs, percentile(samples, 0.5),
              percentile(samples, 0.99));
  return 0;
}
