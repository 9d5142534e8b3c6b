#pragma once
// Streaming gzip (RFC 1952) with zlib, in caller-sized pieces so memory stays flat:
// GzipDecoder inflates request bodies (Content-Encoding: gzip) like Go's gzip.Reader
// (concatenated members, header read eagerly, Go's error texts); GzipEncoder deflates
// downloads at Go's default level.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace cove::files {

class GzipDecoder {
 public:
  enum class Status {
    output,      // `produced` bytes were written (possibly 0 while consuming input)
    need_input,  // all input consumed; set_input() more, or finish()
    end,         // finish() was called and the stream ended cleanly
    error,       // error_message()
  };

  GzipDecoder();
  ~GzipDecoder();
  GzipDecoder(const GzipDecoder&) = delete;
  GzipDecoder& operator=(const GzipDecoder&) = delete;

  // The previous input must have been consumed (decode() returned need_input).
  void set_input(std::string_view input);
  // No more input will come.
  void finish();
  // Inflates into out[0, capacity). capacity 0 parses headers only (see header_done()).
  Status decode(char* out, size_t capacity, size_t& produced);

  // The first member's header has been read completely.
  bool header_done() const;
  // Go's text: "gzip: invalid header", "gzip: invalid checksum", "unexpected EOF", "EOF",
  // "flate: corrupt input before offset N".
  const std::string& error_message() const { return error_; }

 private:
  struct State;
  Status fail(std::string message);
  std::unique_ptr<State> s_;
  std::string error_;
};

class GzipEncoder {
 public:
  explicit GzipEncoder(int level = -1);  // -1: zlib's default (6), as Go's DefaultCompression
  ~GzipEncoder();
  GzipEncoder(const GzipEncoder&) = delete;
  GzipEncoder& operator=(const GzipEncoder&) = delete;

  // Appends the compressed form of `input` to `out` (may append nothing: zlib buffers).
  void write(std::string_view input, std::string& out);
  // Flushes the rest and the gzip trailer into `out`. The encoder is then spent.
  void finish(std::string& out);

 private:
  struct State;
  void run(std::string_view input, int flush, std::string& out);
  std::unique_ptr<State> s_;
};

}  // namespace cove::files
