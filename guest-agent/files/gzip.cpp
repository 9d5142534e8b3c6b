#include "files/gzip.hpp"

#include <zlib.h>

#include <cstring>
#include <stdexcept>

namespace cove::files {

struct GzipDecoder::State {
  z_stream z{};
  gz_header head{};
  bool initialised = false;
  bool finished_input = false;
  bool member_ended = false;  // Z_STREAM_END of the current member; the next byte must start a new one
  bool first_header_done = false;
  bool any_input = false;
  std::uint64_t member_in = 0;  // compressed bytes of the current member consumed so far
  std::string_view input;
  char dummy = 0;
};

GzipDecoder::GzipDecoder() : s_(std::make_unique<State>()) {
  // 16 + MAX_WBITS: gzip wrapper only, as Go's gzip.Reader.
  if (inflateInit2(&s_->z, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error("inflateInit2 failed");
  s_->initialised = true;
  inflateGetHeader(&s_->z, &s_->head);
}

GzipDecoder::~GzipDecoder() {
  if (s_ && s_->initialised) inflateEnd(&s_->z);
}

void GzipDecoder::set_input(std::string_view input) {
  s_->input = input;
  if (!input.empty()) s_->any_input = true;
}

void GzipDecoder::finish() { s_->finished_input = true; }

bool GzipDecoder::header_done() const { return s_->first_header_done; }

GzipDecoder::Status GzipDecoder::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
  return Status::error;
}

GzipDecoder::Status GzipDecoder::decode(char* out, size_t capacity, size_t& produced) {
  produced = 0;
  if (!error_.empty()) return Status::error;
  auto& st = *s_;
  if (st.member_ended) {
    if (st.input.empty()) {
      if (st.finished_input) return Status::end;
      return Status::need_input;
    }
    // Another member follows (Go reads concatenated members as one stream).
    inflateReset(&st.z);
    st.head = gz_header{};
    inflateGetHeader(&st.z, &st.head);
    st.member_ended = false;
    st.member_in = 0;
  }
  if (st.input.empty()) {
    if (!st.finished_input) return Status::need_input;
    if (!st.any_input) return fail("EOF");
    return fail("unexpected EOF");
  }
  st.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(st.input.data()));
  st.z.avail_in = static_cast<uInt>(std::min<size_t>(st.input.size(), 1u << 30));
  st.z.next_out = reinterpret_cast<Bytef*>(capacity ? out : &st.dummy);
  st.z.avail_out = static_cast<uInt>(std::min<size_t>(capacity, 1u << 30));
  const uInt in_before = st.z.avail_in;
  int rc = inflate(&st.z, Z_NO_FLUSH);
  const size_t consumed = in_before - st.z.avail_in;
  st.input.remove_prefix(consumed);
  st.member_in += consumed;
  produced = capacity ? capacity - st.z.avail_out : 0;
  if (st.head.done == 1) st.first_header_done = true;  // -1 would mean "not a gzip header"
  switch (rc) {
    case Z_STREAM_END:
      st.first_header_done = true;
      st.member_ended = true;
      return Status::output;
    case Z_OK:
    case Z_BUF_ERROR:
      // No progress with input at hand would make the caller spin. zlib always progresses
      // through a header, and with room for output through data; be defensive anyway.
      if (consumed == 0 && produced == 0 && !st.input.empty() && (capacity != 0 || !st.first_header_done)) {
        return fail(st.first_header_done ? "gzip: inflate stalled" : "gzip: invalid header");
      }
      return Status::output;
    case Z_DATA_ERROR: {
      std::string msg = st.z.msg ? st.z.msg : "";
      if (st.head.done != 1) return fail("gzip: invalid header");
      if (msg == "incorrect data check" || msg == "incorrect length check") return fail("gzip: invalid checksum");
      return fail("flate: corrupt input before offset " + std::to_string(st.member_in > 10 ? st.member_in - 10 : 0));
    }
    default:
      return fail(std::string("gzip: ") + (st.z.msg ? st.z.msg : "inflate error"));
  }
}

struct GzipEncoder::State {
  z_stream z{};
  bool initialised = false;
  bool finished = false;
};

GzipEncoder::GzipEncoder(int level) : s_(std::make_unique<State>()) {
  if (deflateInit2(&s_->z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  s_->initialised = true;
}

GzipEncoder::~GzipEncoder() {
  if (s_ && s_->initialised) deflateEnd(&s_->z);
}

void GzipEncoder::run(std::string_view input, int flush, std::string& out) {
  auto& z = s_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  z.avail_in = static_cast<uInt>(input.size());
  for (;;) {
    size_t room = std::max<size_t>(deflateBound(&z, z.avail_in), 4096);
    size_t old = out.size();
    out.resize(old + room);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    z.avail_out = static_cast<uInt>(room);
    int rc = deflate(&z, flush);
    out.resize(old + room - z.avail_out);
    if (rc == Z_STREAM_END) return;
    if (rc != Z_OK && rc != Z_BUF_ERROR) throw std::runtime_error("deflate failed");
    if (z.avail_in == 0 && z.avail_out != 0 && flush == Z_NO_FLUSH) return;
  }
}

void GzipEncoder::write(std::string_view input, std::string& out) {
  if (s_->finished || input.empty()) return;
  run(input, Z_NO_FLUSH, out);
}

void GzipEncoder::finish(std::string& out) {
  if (s_->finished) return;
  run({}, Z_FINISH, out);
  s_->finished = true;
}

}  // namespace cove::files
