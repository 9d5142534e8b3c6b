#include "edge/internal_routes.hpp"

#include <array>
#include <vector>

namespace cove::shim::edge {
namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr std::array<std::string_view, 7> kInternal = {"/init",     "/freeze", "/unfreeze", "/collapse",
                                                       "/fsfreeze", "/fsthaw", "/upgrade"};
}  // namespace

std::optional<std::string> request_path(std::string_view target) {
  // Absolute-form (a client talking to us as to a forward proxy): drop scheme and authority.
  if (auto scheme = target.find("://"); scheme != std::string_view::npos && target.front() != '/') {
    auto slash = target.find('/', scheme + 3);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  target = target.substr(0, target.find_first_of("?#"));
  std::string out;
  out.reserve(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] != '%') {
      out.push_back(target[i]);
      continue;
    }
    if (i + 2 >= target.size()) return std::nullopt;
    int hi = hex_value(target[i + 1]), lo = hex_value(target[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

bool is_envd_internal_path(std::string_view decoded_path) {
  if (decoded_path.empty()) return false;
  std::string rooted = decoded_path.front() == '/' ? std::string(decoded_path) : "/" + std::string(decoded_path);
  std::string cleaned = clean_path(rooted);
  for (auto p : kInternal) {
    if (cleaned == p) return true;
  }
  return false;
}

}  // namespace cove::shim::edge
