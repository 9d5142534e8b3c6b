// Wire-level checks of the real cove-agent binary, started on an ephemeral port with a Unix host
// channel: status codes, exact error bodies, CORS, the access token, Connect error framing and
// the CONNECT handshake. The agent runs on the host here, so nothing in this file spawns
// processes through it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <thread>

namespace {

std::string envelope(uint8_t flags, const std::string& payload) {
  std::string out(5, '\0');
  out[0] = static_cast<char>(flags);
  uint32_t n = htonl(static_cast<uint32_t>(payload.size()));
  std::memcpy(&out[1], &n, 4);
  return out + payload;
}

// Reads until `needle` appears, or (empty needle) until the peer closes; at most `timeout`.
std::string read_until(int fd, const std::string& needle,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (needle.empty() || out.find(needle) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string read_all(int fd, std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
  return read_until(fd, {}, timeout);
}

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    ASSERT_GT(n, 0);
    off += static_cast<size_t>(n);
  }
}

int connect_tcp(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int connect_unix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

struct Response {
  int status = 0;
  std::string head;
  std::string body;  // raw (chunked framing left in place for streams)
};

Response parse_response(const std::string& raw) {
  Response r;
  auto end = raw.find("\r\n\r\n");
  r.head = raw.substr(0, end);
  if (end != std::string::npos) r.body = raw.substr(end + 4);
  if (raw.size() > 12) r.status = std::atoi(raw.substr(9, 3).c_str());
  return r;
}

// Removes HTTP/1.1 chunked framing.
std::string dechunk(const std::string& body) {
  std::string out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t eol = body.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t len = std::strtoul(body.substr(pos, eol - pos).c_str(), nullptr, 16);
    if (len == 0) break;
    out += body.substr(eol + 2, len);
    pos = eol + 2 + len + 2;
  }
  return out;
}

class AgentWire : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(std::filesystem::temp_directory_path() / ("cove-wire-" + std::to_string(getpid())));
    std::filesystem::create_directories(*dir_);
    // A private passwd/group so the user checks do not depend on the host's accounts.
    write_file(*dir_ + "/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n");
    write_file(*dir_ + "/etc/group", "root:x:0:\nuser:x:1000:\n");
    socket_path_ = new std::string(*dir_ + "/agent.sock");
    int err_pipe[2];
    ASSERT_EQ(pipe2(err_pipe, O_CLOEXEC), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(err_pipe[1], 2);
      execl(COVE_AGENT_BINARY, COVE_AGENT_BINARY, "-port", "0", "-unix", socket_path_->c_str(), "-etc",
            (*dir_ + "/etc").c_str(), nullptr);
      _exit(127);
    }
    close(err_pipe[1]);
    std::string banner = read_until(err_pipe[0], "\n");
    close(err_pipe[0]);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(banner, m, std::regex("listening on port (\\d+)"))) << banner;
    port_ = static_cast<uint16_t>(std::stoi(m[1]));
    for (int i = 0; i < 100 && !std::filesystem::exists(*socket_path_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  static void TearDownTestSuite() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove_all(*dir_);
  }

  static void write_file(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }

  // One request on a fresh TCP connection that the agent closes afterwards.
  static Response request(const std::string& method, const std::string& path, const std::string& headers = "",
                          const std::string& body = "") {
    int fd = connect_tcp(port_);
    EXPECT_GE(fd, 0);
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + headers;
    if (!body.empty() || method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n" + body;
    write_all(fd, req);
    Response r = parse_response(read_all(fd));
    close(fd);
    return r;
  }

  static inline pid_t pid_ = -1;
  static inline uint16_t port_ = 0;
  static inline std::string* dir_ = nullptr;
  static inline std::string* socket_path_ = nullptr;
};

TEST_F(AgentWire, HealthIs204WithoutBody) {
  auto r = request("GET", "/health");
  EXPECT_EQ(r.status, 204);
  EXPECT_NE(r.head.find("Cache-Control: no-store"), std::string::npos);
  EXPECT_EQ(r.head.find("Content-Length"), std::string::npos);
}

TEST_F(AgentWire, UnknownPathIs404TextAndWrongMethodIs405) {
  auto r = request("GET", "/nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "404 page not found\n");
  EXPECT_EQ(request("POST", "/health").status, 405);
  EXPECT_EQ(request("GET", "/process.Process/List").status, 405);
}

TEST_F(AgentWire, CorsPreflightIsAnsweredBeforeAuth) {
  auto r = request("OPTIONS", "/process.Process/Start",
                   "Origin: https://example.com\r\nAccess-Control-Request-Method: POST\r\n"
                   "Access-Control-Request-Headers: content-type\r\n");
  EXPECT_EQ(r.status, 204);
  EXPECT_NE(r.head.find("Access-Control-Allow-Origin: *"), std::string::npos);
  EXPECT_NE(r.head.find("Access-Control-Allow-Methods: POST"), std::string::npos);
  EXPECT_NE(r.head.find("Access-Control-Max-Age: 7200"), std::string::npos);
}

TEST_F(AgentWire, UnknownBasicUserIsUnauthenticatedInEachProtocol) {
  // base64("ghost:")
  const std::string auth = "Authorization: Basic Z2hvc3Q6\r\n";
  auto unary = request("POST", "/process.Process/List", auth + "Content-Type: application/json\r\n", "{}");
  EXPECT_EQ(unary.status, 401);
  EXPECT_EQ(unary.body, R"({"code":"unauthenticated","message":"invalid username: 'ghost'"})");

  auto stream = request("POST", "/process.Process/Start", auth + "Content-Type: application/connect+json\r\n",
                        envelope(0, R"({"process":{"cmd":"true"}})"));
  EXPECT_EQ(stream.status, 200);
  EXPECT_EQ(dechunk(stream.body),
            envelope(2, R"({"error":{"code":"unauthenticated","message":"invalid username: 'ghost'"}})"));
}

TEST_F(AgentWire, ConnectProtocolErrors) {
  // Unsupported content type.
  EXPECT_EQ(request("POST", "/process.Process/List", "Content-Type: text/plain\r\n", "{}").status, 415);
  // Malformed JSON on a unary call.
  auto bad = request("POST", "/process.Process/List", "Content-Type: application/json\r\n", "{nope");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find(R"("code":"invalid_argument")"), std::string::npos);
  // Unknown process.
  auto nf = request("POST", "/process.Process/SendSignal", "Content-Type: application/json\r\n",
                    R"({"process":{"pid":999999},"signal":"SIGNAL_SIGKILL"})");
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(nf.body, R"({"code":"not_found","message":"process with pid 999999 not found"})");
  // Unsupported signal.
  auto sig = request("POST", "/process.Process/SendSignal", "Content-Type: application/json\r\n",
                     R"({"process":{"pid":1},"signal":"SIGNAL_UNSPECIFIED"})");
  EXPECT_EQ(sig.status, 501);
  // Compressed envelope on a stream: a clean end-stream error, HTTP 200.
  auto compressed = request("POST", "/process.Process/Connect", "Content-Type: application/connect+json\r\n",
                            envelope(1, R"({"process":{"pid":1}})"));
  EXPECT_EQ(compressed.status, 200);
  EXPECT_NE(dechunk(compressed.body).find(R"("code":"internal")"), std::string::npos);
  // Oversized envelope (declared 1 GiB): resource_exhausted, no crash.
  std::string huge = envelope(0, "");
  huge[1] = 0x40;
  auto big = request("POST", "/process.Process/Connect", "Content-Type: application/connect+json\r\n", huge);
  EXPECT_EQ(big.status, 200);
  EXPECT_NE(dechunk(big.body).find(R"("code":"resource_exhausted")"), std::string::npos);
  // A data message before start on StreamInput: invalid_argument instead of a dropped connection.
  auto early = request("POST", "/process.Process/StreamInput", "Content-Type: application/connect+json\r\n",
                       envelope(0, R"({"data":{"input":{"stdin":"aGk="}}})"));
  EXPECT_EQ(early.status, 200);
  EXPECT_NE(dechunk(early.body).find(R"("code":"invalid_argument")"), std::string::npos);
  // Selector with neither pid nor tag.
  auto none = request("POST", "/process.Process/Connect", "Content-Type: application/connect+json\r\n",
                      envelope(0, R"({"process":{}})"));
  EXPECT_NE(dechunk(none.body).find(R"("code":"unimplemented")"), std::string::npos);
  // The agent is still serving.
  EXPECT_EQ(request("GET", "/health").status, 204);
}

TEST_F(AgentWire, HostChannelServesHttpDirectlyAndAfterConnect) {
  int direct = connect_unix(*socket_path_);
  ASSERT_GE(direct, 0);
  write_all(direct, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(parse_response(read_all(direct)).status, 204);
  close(direct);

  int fd = connect_unix(*socket_path_);
  ASSERT_GE(fd, 0);
  write_all(fd, "CONNECT " + std::to_string(port_) + "\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string raw = read_all(fd);
  close(fd);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(raw, m, std::regex("^OK \\d+\n"))) << raw;
  EXPECT_EQ(parse_response(raw.substr(m.length())).status, 204);
}

TEST_F(AgentWire, HostChannelSplicesToLoopbackPorts) {
  // An echo server on 127.0.0.1 stands in for a service inside the sandbox.
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof a;
  getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  const uint16_t echo_port = ntohs(a.sin_port);
  std::thread echo([listener] {
    int c = accept(listener, nullptr, nullptr);
    char buf[65536];
    ssize_t n;
    while ((n = read(c, buf, sizeof buf)) > 0) {
      if (write(c, buf, static_cast<size_t>(n)) != n) break;
    }
    close(c);  // after the client's half-close: the agent must pass the EOF through
  });

  int fd = connect_unix(*socket_path_);
  ASSERT_GE(fd, 0);
  write_all(fd, "CONNECT " + std::to_string(echo_port) + "\nhello ");
  std::string got = read_until(fd, "hello ");
  ASSERT_EQ(got.rfind("OK ", 0), 0u) << got;
  // A larger payload crosses the splice pipes in several pieces.
  std::string payload(300000, 'x');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + i % 26);
  std::thread writer([fd, &payload] {
    write_all(fd, payload);
    shutdown(fd, SHUT_WR);
  });
  std::string rest = read_all(fd, std::chrono::milliseconds(5000));
  writer.join();
  echo.join();
  close(fd);
  close(listener);
  std::string echoed = got.substr(got.find('\n') + 1) + rest;
  EXPECT_EQ(echoed.size(), 6 + payload.size());
  EXPECT_EQ(echoed, "hello " + payload);
}

TEST_F(AgentWire, HostChannelClosesOnClosedPortOrBadHandshake) {
  // Port 1 on loopback has no listener here.
  for (const std::string& hello : {std::string("CONNECT 1\n"), std::string("CONNECT abc\n"), std::string("CONNECT 0\n")}) {
    int fd = connect_unix(*socket_path_);
    ASSERT_GE(fd, 0);
    write_all(fd, hello);
    EXPECT_EQ(read_all(fd), "") << hello;
    close(fd);
  }
  EXPECT_EQ(request("GET", "/health").status, 204);
}

// Runs last among this suite's token-sensitive checks: once a token is set it stays set.
TEST_F(AgentWire, ZZ_InitTokenThenEnforcement) {
  const std::string token = std::string(64, 'a');
  auto init = request("POST", "/init", "Content-Type: application/json\r\n",
                      R"({"accessToken":")" + token + R"(","envVars":{"K":"v"},"defaultUser":"user"})");
  EXPECT_EQ(init.status, 204);
  EXPECT_NE(init.head.find("X-Envd-Version: "), std::string::npos);

  auto denied = request("GET", "/envs");
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.body,
            "{\"code\":401,\"message\":\"unauthorized access, please provide a valid access token or method "
            "signing if supported\"}\n");
  auto allowed = request("GET", "/envs", "X-Access-Token: " + token + "\r\n");
  EXPECT_EQ(allowed.status, 200);
  EXPECT_NE(allowed.body.find(R"("K":"v")"), std::string::npos);
  EXPECT_NE(allowed.body.find(R"("E2B_SANDBOX":"true")"), std::string::npos);
  // Exempt paths stay open.
  EXPECT_EQ(request("GET", "/health").status, 204);
  // Changing the token needs the old one; an empty token is a bad request.
  EXPECT_EQ(request("POST", "/init", "", R"({"accessToken":"other"})").status, 401);
  EXPECT_EQ(request("POST", "/init", "", R"({})").status, 401);
  EXPECT_EQ(request("POST", "/init", "", R"({"accessToken":""})").status, 400);
  EXPECT_EQ(request("POST", "/init", "", R"({"accessToken":")" + token + R"("})").status, 204);
}

}  // namespace
