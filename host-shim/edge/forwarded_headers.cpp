#include "edge/forwarded_headers.hpp"

#include "edge/proxy_errors.hpp"

#include <boost/beast/core/string.hpp>

#include <array>
#include <vector>

namespace cove::shim::edge {
namespace {
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }

constexpr std::array<std::string_view, 7> kHopByHop = {"connection", "keep-alive", "te",     "trailer",
                                                       "transfer-encoding", "upgrade", "proxy-connection"};

bool iequals(std::string_view a, std::string_view b) {
  return beast::iequals(beast::string_view(a.data(), a.size()), beast::string_view(b.data(), b.size()));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Header names listed in Connection headers ("Connection: close, X-Foo" drops X-Foo too).
std::vector<std::string_view> connection_tokens(const Fields& in) {
  std::vector<std::string_view> out;
  for (auto it = in.find(bhttp::field::connection); it != in.end() && it->name() == bhttp::field::connection; ++it) {
    std::string_view v = sv(it->value());
    while (!v.empty()) {
      auto comma = v.find(',');
      std::string_view token = trim(v.substr(0, comma));
      if (!token.empty()) out.push_back(token);
      v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
    }
  }
  return out;
}
}  // namespace

bool is_hop_by_hop(std::string_view name) {
  for (auto h : kHopByHop) {
    if (iequals(name, h)) return true;
  }
  return name.size() >= 6 && iequals(name.substr(0, 6), "proxy-");
}

Fields end_to_end_headers(const Fields& in) {
  auto named = connection_tokens(in);
  Fields out;
  for (const auto& f : in) {
    std::string_view name = sv(f.name_string());
    if (is_hop_by_hop(name)) continue;
    bool listed = false;
    for (auto t : named) listed = listed || iequals(name, t);
    if (!listed) out.insert(f.name_string(), f.value());
  }
  return out;
}

std::string upstream_request_head(std::string_view method, std::string_view target, const Fields& headers,
                                  BodyFraming framing) {
  std::string head;
  head.reserve(512);
  head.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  for (const auto& f : end_to_end_headers(headers)) {
    if (f.name() == bhttp::field::expect) continue;
    // The traffic token is the edge's business; the service behind it never sees it.
    if (iequals(sv(f.name_string()), kTrafficTokenHeader)) continue;
    if (f.name() == bhttp::field::content_length && framing == BodyFraming::chunked) continue;
    head.append(sv(f.name_string())).append(": ").append(sv(f.value())).append("\r\n");
  }
  if (framing == BodyFraming::chunked) head.append("Transfer-Encoding: chunked\r\n");
  head.append("Connection: close\r\n\r\n");
  return head;
}

}  // namespace cove::shim::edge
