#include <sys/random.h>

#include <array>
#include <stdexcept>

#include "lifecycle/clock.hpp"

namespace cove::shim {

std::string RandomIdSource::sandbox_id() {
  constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string id;
  while (id.size() < 20) {
    std::array<unsigned char, 32> bytes;
    if (getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
      throw std::runtime_error("getrandom failed");
    }
    for (unsigned char b : bytes) {
      // 252 = 7 * 36: reject the tail so every character is equally likely.
      if (b < 252 && id.size() < 20) id.push_back(kAlphabet[b % kAlphabet.size()]);
    }
  }
  return id;
}

}  // namespace cove::shim
