// libFuzzer target: the Connect envelope parser (rpc/envelope.hpp, EnvelopeReader).
//
// Input: [max selector][chunking seed][stream bytes...]. The stream is fed in fuzzer-chosen
// fragments and the reader's output is compared with a one-pass reference parse of the whole
// stream: same envelopes (flags, payload), too_large at the same point with the same declared
// length, stickiness after too_large, and pending() equal to the unconsumed tail. Every envelope
// re-encoded with encode_envelope must reproduce the consumed input byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/envelope.hpp"

namespace {

using cove::rpc::Envelope;
using cove::rpc::EnvelopeReader;

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

struct Reference {
  std::vector<Envelope> envelopes;
  bool too_large = false;
  uint64_t declared = 0;
  size_t consumed = 0;
};

Reference reference_parse(std::string_view s, size_t max) {
  Reference r;
  size_t off = 0;
  while (s.size() - off >= 5) {
    const auto* p = reinterpret_cast<const uint8_t*>(s.data() + off);
    const uint64_t len = (uint64_t(p[1]) << 24) | (uint64_t(p[2]) << 16) | (uint64_t(p[3]) << 8) | p[4];
    if (len > max) {
      r.too_large = true;
      r.declared = len;
      break;
    }
    if (s.size() - off - 5 < len) break;
    r.envelopes.push_back({p[0], std::string(s.substr(off + 5, len))});
    off += 5 + len;
  }
  r.consumed = off;
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // Limits around the interesting edges: 0, tiny, the 4096-byte compaction threshold, large.
  static constexpr size_t kMax[] = {0, 1, 4, 5, 16, 255, 4095, 4096, 4097, 65536, 4u << 20, SIZE_MAX};
  const size_t max = kMax[data[0] % (sizeof kMax / sizeof kMax[0])];
  uint32_t seed = data[1] * 2654435761u + 1;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  const Reference ref = reference_parse(stream, max);

  EnvelopeReader reader(max);
  std::vector<Envelope> got;
  std::string reencoded;
  bool too_large = false;
  size_t fed = 0;
  while (!too_large) {
    Envelope env;
    const auto res = reader.next(env);
    if (res == EnvelopeReader::Result::envelope) {
      CHECK(env.payload.size() <= max);
      reencoded += cove::rpc::encode_envelope(env.flags, env.payload);
      got.push_back(std::move(env));
      continue;
    }
    if (res == EnvelopeReader::Result::too_large) {
      too_large = true;
      break;
    }
    // need_more: everything buffered is an incomplete envelope.
    CHECK(reader.pending() == fed - reencoded.size());
    if (fed == stream.size()) break;
    seed = seed * 1103515245u + 12345u;
    // Fragments of 1..64 bytes mostly, sometimes the whole rest at once.
    size_t n = (seed >> 16) % 8 == 0 ? stream.size() - fed : 1 + (seed >> 16) % 64;
    if (n > stream.size() - fed) n = stream.size() - fed;
    reader.feed(stream.substr(fed, n));
    fed += n;
  }

  CHECK(got.size() == ref.envelopes.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].flags == ref.envelopes[i].flags);
    CHECK(got[i].payload == ref.envelopes[i].payload);
  }
  CHECK(reencoded == stream.substr(0, ref.consumed));
  CHECK(too_large == ref.too_large);
  if (too_large) {
    CHECK(reader.declared_length() == ref.declared);
    // Sticky: more input changes nothing.
    reader.feed(std::string_view("\0\0\0\0\0", 5));
    Envelope env;
    CHECK(reader.next(env) == EnvelopeReader::Result::too_large);
    CHECK(reader.next(env) == EnvelopeReader::Result::too_large);
  } else {
    CHECK(fed == stream.size());
    CHECK(reader.pending() == stream.size() - ref.consumed);
  }
  return 0;
}
