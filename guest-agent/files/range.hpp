#pragma once
// Request-header negotiation for downloads: the Range header (RFC 9110 §14, parsed as Go's
// http.ServeContent does) and Accept-Encoding (envd's rules: gzip supported, identity implicit
// unless refused with q=0).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cove::files {

struct ByteRange {
  std::uint64_t start = 0;
  std::uint64_t length = 0;
  // "bytes <first>-<last>/<size>"
  std::string content_range(std::uint64_t size) const;
};

struct RangeSpec {
  enum class Kind {
    none,        // no Range header: the whole file, 200
    ranges,      // satisfiable ranges (more than one: see download.hpp)
    invalid,     // syntax error: 416 "invalid range"
    no_overlap,  // every range lies past the end: 416 "invalid range: failed to overlap"
  };
  Kind kind = Kind::none;
  std::vector<ByteRange> ranges;
};

// "bytes=0-9", "bytes=-5" (last 5), "bytes=5-" (from 5), comma-separated lists. A range starting
// at or past the end is skipped (no_overlap when nothing is left); an end past the file is
// clamped; a suffix longer than the file means the whole file. A range that comes out empty
// (suffix "-0", or any suffix of an empty file) is treated as not overlapping.
RangeSpec parse_range(std::string_view header, std::uint64_t size);

enum class Encoding { identity, gzip };

struct EncodingChoice {
  bool acceptable = true;          // false: 406, nothing we can send is acceptable
  Encoding encoding = Encoding::identity;
  bool identity_acceptable = true;  // for requests forced to identity (Range, conditionals)
};

// An absent or empty header means identity. Entries are taken by descending q (stable):
// identity -> identity, gzip -> gzip, "*" -> identity unless identity is refused (then gzip);
// unknown codings are skipped; q=0 refuses. Identity is refused by "identity;q=0", or by
// "*;q=0" when identity is not listed. Nothing chosen: identity if not refused, else 406.
EncodingChoice negotiate_encoding(std::string_view accept_encoding);

// Content-Encoding of a request body as envd reads it: the coding name before any ';', trimmed
// and lower-cased. "" for an absent header.
std::string request_content_encoding(std::string_view header);

}  // namespace cove::files
