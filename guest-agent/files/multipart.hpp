#pragma once
// Incremental multipart/form-data parser (RFC 7578 / RFC 2046) with the semantics of Go's
// mime/multipart reader, which is what envd's upload endpoint uses. It never buffers a part body:
// bytes are handed out as they are found, and only a lookahead shorter than the delimiter is held
// back. Memory is bounded by the largest chunk fed plus `Limits::max_header_bytes`.
//
// Usage (also the shape a fuzz target uses — any byte sequence is valid input, nothing throws):
//
//   MultipartParser p(boundary);
//   for (each chunk) {
//     p.feed(chunk);
//     for (auto ev = p.next(); ev != Event::need_more; ev = p.next()) {
//       if (ev == Event::part_begin) ... p.headers()
//       if (ev == Event::part_data)  ... p.data()      // valid until the next next()/feed()
//       if (ev == Event::part_end)   ...
//       if (ev == Event::done || ev == Event::error) break-out;   // both are final
//     }
//   }
//   p.finish();   // end of input, then drain next() the same way
//
// After `done` (the closing delimiter) further input is ignored (the epilogue). After `error`
// next() keeps returning `error`.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cove::files {

// A part's MIME headers, names canonicalised as Go's textproto does ("content-disposition" ->
// "Content-Disposition"), in arrival order; repeated names keep every value.
class PartHeaders {
 public:
  // First value of `name` (case-insensitive), or nullopt.
  std::optional<std::string_view> get(std::string_view name) const;
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }
  void add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }
  // A folded continuation line: joined to the last field's value with one space.
  void continue_last(std::string_view more);
  void clear() { fields_.clear(); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

class MultipartParser {
 public:
  struct Limits {
    size_t max_header_bytes = 64 * 1024;  // one part's header block (with its blank line); one line
                                          // before the first delimiter or where a delimiter is due
    size_t max_header_fields = 1000;      // header lines in one part
    size_t max_parts = 10000;             // parts in one body
  };

  enum class Event {
    need_more,   // everything fed so far is consumed (or held as lookahead): feed() or finish()
    part_begin,  // a part's headers are complete: headers()
    part_data,   // some bytes of the current part's body: data()
    part_end,    // the current part's body ended at a delimiter
    done,        // the closing delimiter was seen; final
    error,       // malformed or truncated input: error_message(); final
  };

  explicit MultipartParser(std::string boundary);
  MultipartParser(std::string boundary, Limits limits);

  // Appends input. Invalidates the view returned by data().
  void feed(std::string_view bytes);
  // Declares the end of input; subsequent next() calls resolve what is held back.
  void finish();
  // Advances to the next event.
  Event next();

  const PartHeaders& headers() const { return headers_; }
  std::string_view data() const { return data_; }
  size_t parts_seen() const { return parts_; }

  // Go's error text for the failure, e.g. "multipart: NextPart: EOF".
  const std::string& error_message() const { return error_; }
  // True when the input ended inside a part's body (Go's reader reports io.ErrUnexpectedEOF to
  // whoever is reading that body; envd then fails the file write, not the form read).
  bool error_in_body() const { return error_in_body_; }

 private:
  enum class State { preamble, boundary_line, headers, body, done, error };

  Event fail(std::string message, bool in_body = false);
  Event step_preamble();
  Event step_boundary_line();
  Event step_headers();
  Event step_body();
  // Line classification relative to the delimiter (line includes its newline, if any).
  bool is_delimiter_line(std::string_view line);
  bool is_final_line(std::string_view line) const;
  bool parse_header_block(std::string_view block);
  void compact();

  std::string boundary_;
  Limits limits_;
  std::string dash_boundary_;     // "--" + boundary
  std::string nl_delimiter_;      // "\r\n--" + boundary, or "\n--" + boundary in LF mode
  bool lf_mode_ = false;

  State state_ = State::preamble;
  std::string buf_;
  size_t pos_ = 0;                // first unconsumed byte of buf_
  bool eof_ = false;
  bool skipping_long_line_ = false;  // preamble: inside an over-long line that cannot be a delimiter
  bool pending_part_end_ = false;
  size_t line_search_from_ = 0;    // preamble/boundary line: newline search resumes here (rel. to pos_)
  size_t header_line_start_ = 0;   // headers: start of the incomplete line, relative to pos_
  size_t header_search_from_ = 0;  // headers: where the newline search resumes, relative to pos_
  size_t body_bytes_ = 0;          // bytes of the current body handed out so far

  PartHeaders headers_;
  std::string_view data_;
  size_t parts_ = 0;
  std::string error_;
  bool error_in_body_ = false;
};

// What the upload endpoint needs from a part: Go's Part.FormName() and envd's
// FileNameWithPath() (the raw `filename` parameter, not basename'd).
struct PartDisposition {
  std::string form_name;                // "" unless Content-Disposition is form-data with a name
  std::optional<std::string> filename;  // the filename parameter (RFC 2231 decoded) if present
  std::string filename_error;           // why filename is absent, in envd's words
};
PartDisposition describe_part(const PartHeaders& headers);

}  // namespace cove::files
