#include "system/basic_auth.hpp"

#include <array>
#include <cctype>

namespace cove::system {

std::optional<std::string> basic_auth_username(std::string_view header) {
  constexpr std::string_view prefix = "basic ";
  if (header.size() < prefix.size()) return std::nullopt;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != prefix[i]) return std::nullopt;
  }
  auto decoded = base64_decode(header.substr(prefix.size()));
  if (!decoded) return std::nullopt;
  size_t colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return decoded->substr(0, colon);
}

}  // namespace cove::system
