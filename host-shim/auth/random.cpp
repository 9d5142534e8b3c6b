#include "auth/random.hpp"

#include <sys/random.h>

#include <cerrno>
#include <stdexcept>
#include <string_view>

namespace cove::shim {

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  size_t filled = 0;
  while (filled < n) {
    // Blocks only until the pool is first initialised at boot; never returns weak bytes.
    ssize_t got = ::getrandom(out.data() + filled, n - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed");
    }
    filled += static_cast<size_t>(got);
  }
  return out;
}

std::string random_lowercase_alnum(size_t n) {
  constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  // 252 = 7 * 36: bytes at or above it are discarded so each character is equally likely.
  constexpr unsigned kLimit = 252;
  std::string out;
  out.reserve(n);
  while (out.size() < n) {
    for (unsigned char b : random_bytes(n - out.size() + 8)) {
      if (b >= kLimit) continue;
      out.push_back(kAlphabet[b % kAlphabet.size()]);
      if (out.size() == n) break;
    }
  }
  return out;
}

std::string to_hex(std::string_view bytes) {
  constexpr std::string_view kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

}  // namespace cove::shim
