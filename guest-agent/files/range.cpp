#include "files/range.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

namespace cove::files {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Go's strconv.ParseInt(s, 10, 64): optional sign, decimal digits, no overflow.
std::optional<std::int64_t> parse_int(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
    if (s.empty()) return std::nullopt;
  }
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (static_cast<std::uint64_t>(INT64_MAX) + 1 - static_cast<std::uint64_t>(c - '0')) / 10) return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!negative && v > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  return negative ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
}

}  // namespace

std::string ByteRange::content_range(std::uint64_t size) const {
  return "bytes " + std::to_string(start) + "-" + std::to_string(start + length - 1) + "/" + std::to_string(size);
}

RangeSpec parse_range(std::string_view header, std::uint64_t size) {
  RangeSpec out;
  if (header.empty()) return out;
  constexpr std::string_view kPrefix = "bytes=";
  if (header.substr(0, kPrefix.size()) != kPrefix) {
    out.kind = RangeSpec::Kind::invalid;
    return out;
  }
  const auto isize = static_cast<std::int64_t>(size);
  bool skipped = false;
  std::string_view rest = header.substr(kPrefix.size());
  for (;;) {
    size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    bool last = comma == std::string_view::npos;
    rest = last ? std::string_view{} : rest.substr(comma + 1);
    if (!item.empty()) {
      size_t dash = item.find('-');
      if (dash == std::string_view::npos) {
        out.kind = RangeSpec::Kind::invalid;
        out.ranges.clear();
        return out;
      }
      std::string_view first = trim(item.substr(0, dash)), second = trim(item.substr(dash + 1));
      ByteRange r;
      if (first.empty()) {
        // Suffix: the last N bytes.
        auto n = second.empty() || second[0] == '-' ? std::nullopt : parse_int(second);
        if (!n || *n < 0) {
          out.kind = RangeSpec::Kind::invalid;
          out.ranges.clear();
          return out;
        }
        std::int64_t len = std::min(*n, isize);
        r.start = static_cast<std::uint64_t>(isize - len);
        r.length = static_cast<std::uint64_t>(len);
      } else {
        auto a = parse_int(first);
        if (!a || *a < 0) {
          out.kind = RangeSpec::Kind::invalid;
          out.ranges.clear();
          return out;
        }
        if (*a >= isize) {
          skipped = true;
          if (last) break;
          continue;
        }
        r.start = static_cast<std::uint64_t>(*a);
        if (second.empty()) {
          r.length = size - r.start;
        } else {
          auto b = parse_int(second);
          if (!b || *a > *b) {
            out.kind = RangeSpec::Kind::invalid;
            out.ranges.clear();
            return out;
          }
          std::int64_t end = std::min(*b, isize - 1);
          r.length = static_cast<std::uint64_t>(end - *a + 1);
        }
      }
      if (r.length == 0) {
        skipped = true;
      } else {
        out.ranges.push_back(r);
      }
    }
    if (last) break;
  }
  if (out.ranges.empty()) {
    // "bytes=" with nothing in it is no range at all for Go; with only skipped items, 416.
    out.kind = skipped ? RangeSpec::Kind::no_overlap : RangeSpec::Kind::none;
    return out;
  }
  out.kind = RangeSpec::Kind::ranges;
  return out;
}

EncodingChoice negotiate_encoding(std::string_view header) {
  EncodingChoice out;
  if (trim(header).empty()) return out;
  struct Entry {
    std::string name;
    double q;
  };
  std::vector<Entry> entries;
  std::string_view rest = header;
  for (;;) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    Entry e{{}, 1.0};
    size_t semi = item.find(';');
    e.name = lower(trim(item.substr(0, semi)));
    std::string_view params = semi == std::string_view::npos ? std::string_view{} : item.substr(semi + 1);
    while (!params.empty()) {
      size_t next = params.find(';');
      std::string_view p = trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
      if (p.size() >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
        std::string num(p.substr(2));
        char* end = nullptr;
        double q = std::strtod(num.c_str(), &end);
        if (!num.empty() && end == num.c_str() + num.size() && q == q) e.q = q;  // invalid: keep 1
      }
    }
    entries.push_back(std::move(e));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.q > b.q; });

  bool identity_listed = false, identity_refused = false, star_refused = false, gzip_refused = false;
  for (const auto& e : entries) {
    if (e.name == "identity") {
      if (e.q == 0) identity_refused = true;
      else identity_listed = true;
    }
    if (e.name == "*" && e.q == 0) star_refused = true;
    if (e.name == "gzip" && e.q == 0) gzip_refused = true;
  }
  if (!identity_listed && star_refused) identity_refused = true;
  out.identity_acceptable = !identity_refused;

  for (const auto& e : entries) {
    if (e.q == 0) continue;
    if (e.name == "identity") {
      out.encoding = Encoding::identity;
      return out;
    }
    if (e.name == "gzip") {
      out.encoding = Encoding::gzip;
      return out;
    }
    if (e.name == "*") {
      if (!identity_refused) {
        out.encoding = Encoding::identity;
        return out;
      }
      if (!gzip_refused) {
        out.encoding = Encoding::gzip;
        return out;
      }
    }
  }
  if (!identity_refused) return out;
  out.acceptable = false;
  return out;
}

std::string request_content_encoding(std::string_view header) {
  return lower(trim(header.substr(0, header.find(';'))));
}

}  // namespace cove::files
