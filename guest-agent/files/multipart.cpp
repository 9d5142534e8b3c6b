#include "files/multipart.hpp"

#include <algorithm>
#include <cctype>

#include "files/media_type.hpp"
#include "system/go_errors.hpp"

namespace cove::files {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view skip_lwsp(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

std::string_view trim_lwsp(std::string_view s) {
  s = skip_lwsp(s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 7230 tchar: what Go accepts in a MIME header name.
bool is_header_name_char(unsigned char c) {
  if (std::isalnum(c)) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

std::string canonical_header_name(std::string_view name) {
  std::string out(name);
  bool upper = true;
  for (auto& c : out) {
    c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    upper = c == '-';
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::optional<std::string_view> PartHeaders::get(std::string_view name) const {
  for (const auto& [k, v] : fields_) {
    if (iequals(k, name)) return std::string_view(v);
  }
  return std::nullopt;
}

void PartHeaders::continue_last(std::string_view more) {
  if (fields_.empty() || more.empty()) return;
  auto& value = fields_.back().second;
  if (!value.empty()) value += ' ';
  value.append(more);
}

MultipartParser::MultipartParser(std::string boundary) : MultipartParser(std::move(boundary), Limits{}) {}

MultipartParser::MultipartParser(std::string boundary, Limits limits)
    : boundary_(std::move(boundary)), limits_(limits) {
  dash_boundary_ = "--" + boundary_;
  nl_delimiter_ = "\r\n" + dash_boundary_;
}

void MultipartParser::compact() {
  if (pos_ == 0) return;
  buf_.erase(0, pos_);
  pos_ = 0;
}

void MultipartParser::feed(std::string_view bytes) {
  data_ = {};
  if (state_ == State::done || state_ == State::error || eof_) return;
  compact();
  buf_.append(bytes);
}

void MultipartParser::finish() {
  data_ = {};
  eof_ = true;
}

MultipartParser::Event MultipartParser::fail(std::string message, bool in_body) {
  state_ = State::error;
  error_ = std::move(message);
  error_in_body_ = in_body;
  buf_.clear();
  buf_.shrink_to_fit();
  pos_ = 0;
  return Event::error;
}

bool MultipartParser::is_delimiter_line(std::string_view line) {
  if (!starts_with(line, dash_boundary_)) return false;
  std::string_view rest = skip_lwsp(line.substr(dash_boundary_.size()));
  // The first delimiter line decides the line ending for the whole body (Go does the same).
  if (parts_ == 0 && rest == "\n") {
    lf_mode_ = true;
    nl_delimiter_ = "\n" + dash_boundary_;
  }
  return rest == (lf_mode_ ? "\n" : "\r\n");
}

bool MultipartParser::is_final_line(std::string_view line) const {
  if (!starts_with(line, dash_boundary_) || !starts_with(line.substr(dash_boundary_.size()), "--")) return false;
  std::string_view rest = skip_lwsp(line.substr(dash_boundary_.size() + 2));
  return rest.empty() || rest == (lf_mode_ ? "\n" : "\r\n");
}

MultipartParser::Event MultipartParser::next() {
  data_ = {};
  if (pending_part_end_) {
    pending_part_end_ = false;
    return Event::part_end;
  }
  for (;;) {
    switch (state_) {
      case State::done: return Event::done;
      case State::error: return Event::error;
      case State::preamble: {
        auto ev = step_preamble();
        if (ev != Event::need_more || state_ != State::headers) return ev;
        break;
      }
      case State::boundary_line: {
        auto ev = step_boundary_line();
        if (ev != Event::need_more || state_ != State::headers) return ev;
        break;
      }
      case State::headers: return step_headers();
      case State::body: return step_body();
    }
  }
}

// Lines before the first delimiter are skipped. Over-long lines cannot be a delimiter line and
// are dropped without being kept whole.
MultipartParser::Event MultipartParser::step_preamble() {
  if (boundary_.empty()) return fail("multipart: boundary is empty");
  for (;;) {
    size_t nl = buf_.find('\n', pos_ + line_search_from_);
    if (nl == std::string::npos) {
      if (eof_) {
        std::string_view line(buf_.data() + pos_, buf_.size() - pos_);
        if (!skipping_long_line_ && line.size() <= limits_.max_header_bytes && is_final_line(line)) {
          state_ = State::done;
          return Event::done;
        }
        return fail("multipart: NextPart: EOF");
      }
      if (buf_.size() - pos_ > limits_.max_header_bytes) {
        skipping_long_line_ = true;
        pos_ = buf_.size();
      }
      line_search_from_ = buf_.size() - pos_;
      return Event::need_more;
    }
    std::string_view line(buf_.data() + pos_, nl + 1 - pos_);
    pos_ = nl + 1;
    line_search_from_ = 0;
    // Over-long lines are skipped however they arrive (whole or in pieces), so the outcome
    // never depends on how the input was chunked.
    if (skipping_long_line_ || line.size() - 1 > limits_.max_header_bytes) {
      skipping_long_line_ = false;
      continue;
    }
    if (is_delimiter_line(line)) {
      if (++parts_ > limits_.max_parts) return fail("multipart: too many parts");
      headers_.clear();
      state_ = State::headers;
      return Event::need_more;  // caller loop continues into headers
    }
    if (is_final_line(line)) {
      state_ = State::done;
      return Event::done;
    }
  }
}

// After a part's body: the delimiter line of the next part or the closing delimiter.
MultipartParser::Event MultipartParser::step_boundary_line() {
  size_t nl = buf_.find('\n', pos_ + line_search_from_);
  // A line longer than any delimiter line may be is refused by its length alone, with or
  // without its newline in view.
  size_t content = (nl == std::string::npos ? buf_.size() : nl) - pos_;
  if (content > limits_.max_header_bytes) {
    return fail("multipart: expecting a new Part; got line " +
                system::go_quote(std::string_view(buf_.data() + pos_, std::min<size_t>(content, 64))) + " (truncated)");
  }
  if (nl == std::string::npos) {
    line_search_from_ = buf_.size() - pos_;
    std::string_view line(buf_.data() + pos_, buf_.size() - pos_);
    if (eof_) {
      if (is_final_line(line)) {
        state_ = State::done;
        return Event::done;
      }
      return fail("multipart: NextPart: EOF");
    }
    return Event::need_more;
  }
  std::string_view line(buf_.data() + pos_, nl + 1 - pos_);
  pos_ = nl + 1;
  line_search_from_ = 0;
  if (is_delimiter_line(line)) {
    if (++parts_ > limits_.max_parts) return fail("multipart: too many parts");
    headers_.clear();
    state_ = State::headers;
    return Event::need_more;
  }
  if (is_final_line(line)) {
    state_ = State::done;
    return Event::done;
  }
  return fail("multipart: expecting a new Part; got line " + system::go_quote(line));
}

MultipartParser::Event MultipartParser::step_headers() {
  // The block ends at the first empty line; lines end in LF with an optional CR.
  // The block runs up to and including its blank line and may take max_header_bytes. It is
  // refused as soon as a lower bound of its size exceeds that, so the verdict does not depend
  // on how the input was chunked: an incomplete line needs at least one more byte (its LF), a
  // complete non-blank line at least one more (the blank line's LF).
  const size_t limit = limits_.max_header_bytes;
  size_t line_start = pos_ + header_line_start_;
  size_t search = pos_ + header_search_from_;
  for (;;) {
    size_t nl = buf_.find('\n', search);
    if (nl == std::string::npos) {
      header_line_start_ = line_start - pos_;
      header_search_from_ = buf_.size() - pos_;
      if (buf_.size() - pos_ + 1 > limit) return fail("multipart: message too large");
      if (eof_) return fail("unexpected EOF");
      return Event::need_more;
    }
    std::string_view line(buf_.data() + line_start, nl - line_start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (nl + 1 - pos_ > limit) return fail("multipart: message too large");
      std::string_view block(buf_.data() + pos_, line_start - pos_);
      if (!parse_header_block(block)) return Event::error;
      pos_ = nl + 1;
      header_line_start_ = header_search_from_ = 0;
      body_bytes_ = 0;
      state_ = State::body;
      return Event::part_begin;
    }
    if (nl + 2 - pos_ > limit) return fail("multipart: message too large");
    line_start = search = nl + 1;
  }
}

bool MultipartParser::parse_header_block(std::string_view block) {
  size_t count = 0;
  while (!block.empty()) {
    size_t nl = block.find('\n');
    std::string_view line = block.substr(0, nl);
    block = nl == std::string_view::npos ? std::string_view{} : block.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.front() == ' ' || line.front() == '\t') {
      // A folded continuation of the previous field.
      if (headers_.fields().empty()) {
        fail("malformed MIME header initial line: " + std::string(line));
        return false;
      }
      headers_.continue_last(trim_lwsp(line));
      continue;
    }
    size_t colon = line.find(':');
    std::string_view name = line.substr(0, colon);
    bool valid = colon != std::string_view::npos && !name.empty();
    for (unsigned char c : name) valid = valid && is_header_name_char(c);
    if (!valid) {
      fail("malformed MIME header line: " + std::string(line));
      return false;
    }
    if (++count > limits_.max_header_fields) {
      fail("multipart: message too large");
      return false;
    }
    headers_.add(canonical_header_name(name), std::string(trim_lwsp(line.substr(colon + 1))));
  }
  return true;
}

MultipartParser::Event MultipartParser::step_body() {
  const size_t nl_len = lf_mode_ ? 1 : 2;
  auto emit = [&](size_t end) {
    data_ = std::string_view(buf_.data() + pos_, end - pos_);
    body_bytes_ += end - pos_;
    pos_ = end;
    return Event::part_data;
  };
  auto end_part = [&](size_t data_end, size_t next_line) {
    state_ = State::boundary_line;
    if (data_end > pos_) {
      data_ = std::string_view(buf_.data() + pos_, data_end - pos_);
      body_bytes_ += data_end - pos_;
      pos_ = next_line;
      pending_part_end_ = true;
      return Event::part_data;
    }
    pos_ = next_line;
    return Event::part_end;
  };
  // What follows a delimiter decides whether it is one: LWSP or a newline, or "--".
  // 1 = delimiter, -1 = ordinary data, 0 = cannot tell yet.
  auto classify_after = [&](size_t after) -> int {
    if (after == buf_.size()) return eof_ ? 1 : 0;
    char c = buf_[after];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return 1;
    if (c != '-') return -1;
    if (after + 1 == buf_.size()) return eof_ ? -1 : 0;
    return buf_[after + 1] == '-' ? 1 : -1;
  };

  // At the very start of a body the delimiter may appear without its leading newline.
  if (body_bytes_ == 0) {
    std::string_view avail(buf_.data() + pos_, buf_.size() - pos_);
    if (starts_with(avail, dash_boundary_)) {
      int kind = classify_after(pos_ + dash_boundary_.size());
      if (kind == 0) return Event::need_more;
      if (kind == 1) return end_part(pos_, pos_);
      return emit(pos_ + dash_boundary_.size());
    }
    if (starts_with(dash_boundary_, avail)) {
      if (eof_) return fail("unexpected EOF", true);
      return Event::need_more;
    }
  }

  size_t from = pos_;
  for (;;) {
    size_t idx = std::string_view(buf_).find(nl_delimiter_, from);
    if (idx == std::string::npos) {
      if (eof_) return fail("unexpected EOF", true);
      // Hold back a tail that could be the start of a delimiter.
      size_t keep = std::min(nl_delimiter_.size() - 1, buf_.size() - pos_);
      size_t safe = buf_.size() - keep;
      if (safe > pos_) return emit(safe);
      return Event::need_more;
    }
    int kind = classify_after(idx + nl_delimiter_.size());
    if (kind == 1) return end_part(idx, idx + nl_len);
    if (kind == 0) {
      if (idx > pos_) return emit(idx);
      return Event::need_more;
    }
    from = idx + 1;
  }
}

PartDisposition describe_part(const PartHeaders& headers) {
  PartDisposition out;
  auto cd = headers.get("Content-Disposition");
  MediaType mt = parse_media_type(cd ? *cd : std::string_view{});
  if (mt.ok() && mt.type == "form-data") {
    if (auto it = mt.params.find("name"); it != mt.params.end()) out.form_name = it->second;
  }
  if (!mt.ok()) {
    out.filename_error = mt.error;
  } else if (auto it = mt.params.find("filename"); it != mt.params.end()) {
    out.filename = it->second;
  } else {
    out.filename_error = "filename not found in Content-Disposition header";
  }
  return out;
}

}  // namespace cove::files
