// libFuzzer target: the multipart/form-data parser (files/multipart.hpp, MultipartParser) and what
// the upload endpoint does with each part (describe_part, parse_media_type).
//
// Input: [boundary length][chunking seed][limits selector][boundary bytes][body bytes...].
// The body is parsed twice — fed in fuzzer-chosen fragments and fed whole — and both parses must
// tell the same story: the same parts with the same headers and body bytes, ending the same way.
// Also checked: events come in a valid order, data is never empty and never more than was fed,
// done/error are final, finish() always resolves (never need_more after the end of input: the
// server would wait forever), and formatting a parsed media type parses back to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "files/media_type.hpp"
#include "files/multipart.hpp"

namespace {

using cove::files::MultipartParser;
using Event = MultipartParser::Event;

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

void check_media_type(std::string_view value) {
  auto mt = cove::files::parse_media_type(value);
  if (!mt.ok()) return;
  const std::string formatted = cove::files::format_media_type(mt.type, mt.params);
  if (formatted.empty()) return;
  auto again = cove::files::parse_media_type(formatted);
  if (!again.ok() || again.type != mt.type || again.params != mt.params) {
    std::fprintf(stderr, "media type round trip: '%.*s' -> '%s' -> %s\n", int(value.size()), value.data(),
                 formatted.c_str(), again.ok() ? "different value" : again.error.c_str());
    std::abort();
  }
}

// What a parse produced, comparable across chunkings.
struct Story {
  std::vector<std::string> parts;  // per part: serialized headers, then "|", then the body bytes
  bool done = false;
  bool error = false;
  bool error_in_body = false;
  std::string error_message;
};

struct Run {
  MultipartParser parser;
  Story story;
  bool in_part = false;
  bool final = false;
  size_t fed = 0;
  size_t data_bytes = 0;

  Run(const std::string& boundary, const MultipartParser::Limits& limits) : parser(boundary, limits) {}

  // Drains next() until need_more or a final event.
  void drain(bool after_finish) {
    for (;;) {
      const Event ev = parser.next();
      switch (ev) {
        case Event::need_more:
          CHECK(!after_finish);  // end of input must resolve to done or error
          return;
        case Event::part_begin: {
          CHECK(!in_part);
          in_part = true;
          std::string s;
          for (const auto& [k, v] : parser.headers().fields()) {
            s += k + ":" + v + "\n";
            check_media_type(v);
          }
          auto d = cove::files::describe_part(parser.headers());
          CHECK(d.filename.has_value() != !d.filename_error.empty());
          story.parts.push_back(s + "|");
          break;
        }
        case Event::part_data: {
          CHECK(in_part);
          const auto data = parser.data();
          CHECK(!data.empty());
          data_bytes += data.size();
          CHECK(data_bytes <= fed);
          story.parts.back().append(data);
          break;
        }
        case Event::part_end:
          CHECK(in_part);
          in_part = false;
          break;
        case Event::done:
        case Event::error:
          final = true;
          story.done = ev == Event::done;
          story.error = ev == Event::error;
          story.error_in_body = parser.error_in_body();
          story.error_message = parser.error_message();
          CHECK(story.error == !story.error_message.empty());
          CHECK(story.error || !story.error_in_body);
          // Final: asking again, or feeding more, changes nothing.
          CHECK(parser.next() == ev);
          parser.feed("\r\n--x\r\n\r\n");
          CHECK(parser.next() == ev);
          return;
      }
    }
  }

  void feed(std::string_view bytes) {
    if (final) return;
    parser.feed(bytes);
    fed += bytes.size();
    drain(false);
  }

  void finish() {
    if (final) return;
    parser.finish();
    drain(true);
    CHECK(final);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const size_t boundary_len = data[0] % 72;  // 0 (invalid) .. 71 (one over RFC 2046's 70)
  uint32_t seed = data[1] * 2654435761u + 1;
  const bool small_limits = data[2] & 1;
  if (size - 3 < boundary_len) return 0;
  const std::string boundary(reinterpret_cast<const char*>(data) + 3, boundary_len);
  const std::string_view body(reinterpret_cast<const char*>(data) + 3 + boundary_len, size - 3 - boundary_len);

  MultipartParser::Limits limits;
  if (small_limits) {
    limits.max_header_bytes = 64;
    limits.max_header_fields = 4;
    limits.max_parts = 3;
  }

  Run whole(boundary, limits);
  whole.feed(body);
  whole.finish();

  Run pieces(boundary, limits);
  size_t off = 0;
  while (off < body.size() && !pieces.final) {
    seed = seed * 1103515245u + 12345u;
    size_t n = 1 + (seed >> 16) % 32;
    if (n > body.size() - off) n = body.size() - off;
    pieces.feed(body.substr(off, n));
    off += n;
  }
  pieces.finish();

  // The part over the limit fails the parse before its headers are handed out.
  CHECK(whole.story.parts.size() <= limits.max_parts);
  CHECK(whole.parser.parts_seen() <= limits.max_parts || whole.story.error);
  CHECK(whole.story.done == pieces.story.done);
  CHECK(whole.story.error == pieces.story.error);
  CHECK(whole.story.parts == pieces.story.parts);
  if (!small_limits) {
    CHECK(whole.story.error_in_body == pieces.story.error_in_body);
    CHECK(whole.story.error_message == pieces.story.error_message);
  }
  return 0;
}
