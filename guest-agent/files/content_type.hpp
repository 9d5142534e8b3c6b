#pragma once
// Content-Type of a downloaded file: by extension from a fixed table (Go's built-in types plus
// the common entries of Debian's /etc/mime.types, "; charset=utf-8" on text types as Go adds
// it), otherwise sniffed from the first bytes like Go's http.DetectContentType.
#include <cstddef>
#include <string>
#include <string_view>

namespace cove::files {

inline constexpr size_t kSniffLength = 512;

// Extension of the last path element (from its last '.'), looked up case-insensitively;
// "" when unknown.
std::string content_type_by_extension(std::string_view path);

// Go's DetectContentType for the common signatures (HTML, XML, PDF, PostScript, images, zip,
// gzip, rar, wasm, BOMs), then text/plain; charset=utf-8 when no byte is a binary control
// byte, else application/octet-stream. Looks at no more than kSniffLength bytes.
std::string sniff_content_type(std::string_view data);

}  // namespace cove::files
