#pragma once
// Media types and their parameters (Content-Type, Content-Disposition) with the behaviour of Go's
// mime.ParseMediaType / mime.FormatMediaType: tokens and quoted strings, RFC 2231 extended and
// continued parameters, lower-cased names.
#include <map>
#include <string>
#include <string_view>

namespace cove::files {

struct MediaType {
  std::string type;                          // lower-cased, "" when unparsable
  std::map<std::string, std::string> params;  // parameter names lower-cased
  std::string error;                         // Go's error text, "" on success
  bool ok() const { return error.empty(); }
};

// As Go: a bad parameter list still yields `type` (with no params) and the error
// "mime: invalid media parameter"; a bad type yields neither.
MediaType parse_media_type(std::string_view value);

// "inline; filename=a.txt", quoted when not a token, `filename*=utf-8''...` when the value has
// bytes outside printable ASCII. Returns "" when `type` or a name is not a token.
std::string format_media_type(std::string_view type, const std::map<std::string, std::string>& params);

bool is_mime_token(std::string_view s);

}  // namespace cove::files
