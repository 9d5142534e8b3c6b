#include "auth/tokens.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "auth/random.hpp"

namespace cove::shim {
namespace {

constexpr size_t kSeedBytes = 32;

// Messages name "the state directory" rather than the path: host paths stay out of errors.
[[noreturn]] void fail(const std::string& what, int err) {
  throw std::runtime_error(what + ": " + std::strerror(err));
}

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t len = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, sizeof mac,
                &len) == nullptr) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return to_hex(std::string_view(reinterpret_cast<const char*>(mac), len));
}

// mkdir -p, new components mode 0700 (the state directory holds secrets).
void ensure_private_dir(const std::string& dir) {
  if (dir.empty()) throw std::runtime_error("the state directory is not set");
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) fail("cannot create the state directory", errno);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) fail("cannot access the state directory", errno);
  if (!S_ISDIR(st.st_mode)) throw std::runtime_error("the state directory is not a directory");
}

std::optional<std::string> read_seed(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail("cannot open the seed file in the state directory", errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("cannot stat the seed file", err);
  }
  // Like ssh with private keys: a secret others can read is refused rather than silently used.
  if ((st.st_mode & 077) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error("the seed file in the state directory must be a regular file with mode 0600");
  }
  std::string seed(kSeedBytes + 1, '\0');
  size_t got = 0;
  while (got < seed.size()) {
    ssize_t n = ::read(fd, seed.data() + got, seed.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      fail("cannot read the seed file", err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got != kSeedBytes) throw std::runtime_error("the seed file in the state directory is corrupt (expected 32 bytes)");
  seed.resize(kSeedBytes);
  return seed;
}

// Written to a private temporary name, then hard-linked into place: link() never replaces an
// existing file, so two processes racing on first start both end up with the one seed that won.
void create_seed(const std::string& dir, const std::string& path) {
  std::string tmp = dir + "/.seed." + random_lowercase_alnum(12);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) fail("cannot create the seed file in the state directory", errno);
  std::string seed = random_bytes(kSeedBytes);
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, seed.data(), seed.size()) == static_cast<ssize_t>(seed.size()) &&
            ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    fail("cannot write the seed file", err);
  }
  int linked = ::link(tmp.c_str(), path.c_str());
  err = errno;
  ::unlink(tmp.c_str());
  if (linked != 0 && err != EEXIST) fail("cannot create the seed file in the state directory", err);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // the new name survives a crash
    ::close(dfd);
  }
}

}  // namespace

TokenIssuer TokenIssuer::from_state_dir(const std::string& state_dir) {
  ensure_private_dir(state_dir);
  std::string path = state_dir + "/seed";
  if (auto seed = read_seed(path)) return TokenIssuer(std::move(*seed));
  create_seed(state_dir, path);
  auto seed = read_seed(path);
  if (!seed) throw std::runtime_error("the seed file vanished after creation");
  return TokenIssuer(std::move(*seed));
}

std::string TokenIssuer::envd_access_token(std::string_view sandbox_id) const {
  return hmac_sha256_hex(seed_, sandbox_id);
}

std::string TokenIssuer::traffic_access_token(std::string_view sandbox_id) const {
  std::string data = "sandbox-traffic-" + std::string(sandbox_id);
  return hmac_sha256_hex(seed_, data);
}

bool secrets_equal(std::string_view a, std::string_view b) {
  // The length of a token is public (fixed by its format); only the contents need hiding.
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace cove::shim
