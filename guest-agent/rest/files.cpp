#include "rest/files.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <vector>

#include "files/compose.hpp"
#include "files/download.hpp"
#include "files/gzip.hpp"
#include "files/metadata.hpp"
#include "files/range.hpp"
#include "files/signing.hpp"
#include "files/upload.hpp"
#include "rest/json_error.hpp"
#include "system/paths.hpp"

namespace cove::rest {
namespace {

namespace net = http::net;
using net::awaitable;

constexpr size_t kBodyChunk = 256 * 1024;       // one read of the request body
constexpr size_t kInflateChunk = 256 * 1024;    // one piece of inflated body
constexpr size_t kYieldEvery = 1 << 20;         // disk work between two suspensions, at most
constexpr size_t kDrainLimit = 4 << 20;         // unread body swallowed before an early answer
constexpr size_t kComposeBodyLimit = 16 << 20;  // a compose request is a short JSON document

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

awaitable<void> yield_now() {
  auto executor = co_await net::this_coro::executor;
  co_await net::post(executor, net::use_awaitable);
}

// The generated wrapper's answer to a malformed query parameter (Go's http.Error).
awaitable<void> respond_text_error(http::Exchange& ex, unsigned status, const std::string& message) {
  ex.response_headers().set("X-Content-Type-Options", "nosniff");
  std::string body = message + "\n";
  co_await ex.respond(status, "text/plain; charset=utf-8", std::move(body));
}

// Before answering while the request body is still coming: swallow a bounded amount so the
// connection can be reused (and the client is not reset mid-send); beyond that, close after.
awaitable<void> settle_body(http::Exchange& ex) {
  if (ex.body_done()) co_return;
  if (ex.continue_pending()) {
    ex.close_after();  // the client holds the body back until told to send it; it never will be
    co_return;
  }
  std::vector<char> sink(64 * 1024);
  size_t drained = 0;
  while (!ex.body_done() && drained < kDrainLimit) {
    size_t n = co_await ex.read_body_some(sink.data(), sink.size());
    if (n == 0) break;
    drained += n;
  }
  if (!ex.body_done()) ex.close_after();
}

awaitable<void> fail(http::Exchange& ex, const files::TransferError& error) {
  co_await settle_body(ex);
  co_await respond_json_error(ex, error.status, error.message);
}

awaitable<void> fail(http::Exchange& ex, unsigned status, const std::string& message) {
  co_await settle_body(ex);
  co_await respond_json_error(ex, status, message);
}

struct FileQuery {
  std::optional<std::string> path, username, signature;
  files::ExpirationParam expiration;
};

FileQuery read_query(const http::Exchange& ex) {
  FileQuery q;
  q.path = ex.query_param("path");
  q.username = ex.query_param("username");
  q.signature = ex.query_param("signature");
  q.expiration = files::parse_signature_expiration(ex.query_param("signature_expiration"));
  return q;
}

// "" when the request may go on, else the 401 message (envd.md §1; only when a token is set).
std::string check_signing(const http::Exchange& ex, const FileQuery& q, const system::AgentState& state,
                          files::SignOp op) {
  if (!state.has_token()) return {};
  files::SignatureInput in;
  in.header_token = ex.header("X-Access-Token");
  in.signature = q.signature ? &*q.signature : nullptr;
  in.expiration = q.expiration.value;
  in.path = q.path ? std::string_view(*q.path) : std::string_view();
  in.username = q.username ? std::string_view(*q.username) : std::string_view();
  return files::verify_signature(in, state.access_token(), op, now_unix());
}

std::string unknown_user(const std::string& name) {
  return "error looking up user '" + name + "': user: unknown user " + name;
}

// ---- GET /files ----

awaitable<void> download(http::Exchange& ex, const FileEndpointDeps& d) {
  FileQuery q = read_query(ex);
  if (!q.expiration.error.empty()) {
    co_await respond_text_error(ex, 400, q.expiration.error);
    co_return;
  }
  if (const std::string denied = check_signing(ex, q, d.state, files::SignOp::read); !denied.empty()) {
    co_await respond_json_error(ex, 401, denied);
    co_return;
  }
  const std::string username = q.username ? *q.username : d.state.default_user();
  auto user = d.users.lookup(username);
  if (!user) {
    const std::string message = unknown_user(username);
    co_await respond_json_error(ex, 401, message);
    co_return;
  }
  const std::string raw_path = q.path.value_or("");
  auto resolved = system::resolve_path(raw_path, *user, d.state.default_workdir());
  if (!resolved.ok()) {
    const std::string message = "error expanding and resolving path '" + raw_path + "': " + resolved.error;
    co_await respond_json_error(ex, 400, message);
    co_return;
  }

  files::DownloadRequest req;
  req.raw_path = raw_path;
  req.resolved_path = resolved.path;
  req.accept_encoding = ex.header("Accept-Encoding");
  req.range = ex.header("Range");
  req.if_match = ex.header("If-Match");
  req.if_unmodified_since = ex.header("If-Unmodified-Since");
  req.if_none_match = ex.header("If-None-Match");
  req.if_modified_since = ex.header("If-Modified-Since");
  req.if_range = ex.header("If-Range");
  files::DownloadPlan plan = files::plan_download(req);
  for (const auto& [name, value] : plan.headers) ex.response_headers().set(name, value);

  if (!plan.stream) {
    if (plan.json_error) {
      co_await respond_json_error(ex, plan.status, plan.body);
    } else {
      std::string text = std::move(plan.body);
      co_await ex.respond(plan.status, plan.content_type, std::move(text));
    }
    co_return;
  }

  const bool gzip = plan.gzip;
  const unsigned status = plan.status;
  const std::string content_type = plan.content_type;
  const std::uint64_t length = plan.length;
  files::DownloadStream stream(plan);
  std::string piece;
  if (!gzip) {
    if (length == 0) {
      std::string empty;
      co_await ex.respond(status, content_type, std::move(empty));
      co_return;
    }
    co_await ex.begin_sized(status, content_type, length);
    for (;;) {
      bool more = stream.next(piece);
      if (!piece.empty()) {
        bool sent = co_await ex.write_body(piece);
        if (!sent) co_return;
      }
      if (!more) break;
    }
    // A file that shrank (or failed) mid-way cannot honour its Content-Length.
    if (stream.failed()) ex.close_after();
    co_return;
  }
  co_await ex.begin_stream(status, content_type);
  for (;;) {
    bool more = stream.next(piece);
    if (!piece.empty()) {
      bool sent = co_await ex.write_chunk(piece);
      if (!sent) co_return;
    }
    if (!more) break;
  }
  if (stream.failed()) {
    ex.close_after();  // no terminating chunk: the client sees a truncated body, not a short file
    co_return;
  }
  co_await ex.finish_stream();
}

// ---- POST /files ----

// The request body, decompressed when Content-Encoding is gzip, read in bounded pieces.
class BodyReader {
 public:
  BodyReader(http::Exchange& ex, bool gzip) : ex_(ex), raw_(kBodyChunk), out_(gzip ? kInflateChunk : 0) {
    if (gzip) decoder_ = std::make_unique<files::GzipDecoder>();
  }

  // Reads until the gzip header is complete (envd creates its gzip reader up front). "" when
  // fine, else Go's reason ("EOF", "gzip: invalid header", "unexpected EOF").
  awaitable<std::string> read_gzip_header() {
    for (;;) {
      size_t produced = 0;
      auto st = decoder_->decode(nullptr, 0, produced);
      if (st == files::GzipDecoder::Status::error) co_return decoder_->error_message();
      if (decoder_->header_done()) co_return std::string();
      if (st == files::GzipDecoder::Status::end) co_return std::string("EOF");
      if (st == files::GzipDecoder::Status::need_input) {
        bool more = co_await refill();
        if (!more) decoder_->finish();
      }
    }
  }

  // The next piece of decoded body: empty at the end. On a decoding error `error` is set.
  awaitable<std::string_view> next(std::string& error) {
    if (!decoder_) {
      size_t n = co_await ex_.read_body_some(raw_.data(), raw_.size());
      co_return std::string_view(raw_.data(), n);
    }
    for (;;) {
      size_t produced = 0;
      auto st = decoder_->decode(out_.data(), out_.size(), produced);
      if (st == files::GzipDecoder::Status::error) {
        error = decoder_->error_message();
        co_return std::string_view();
      }
      if (produced > 0) co_return std::string_view(out_.data(), produced);
      if (st == files::GzipDecoder::Status::end) co_return std::string_view();
      if (st == files::GzipDecoder::Status::need_input) {
        bool more = co_await refill();
        if (!more) decoder_->finish();
      }
    }
  }

 private:
  awaitable<bool> refill() {
    size_t n = co_await ex_.read_body_some(raw_.data(), raw_.size());
    if (n == 0) co_return false;
    decoder_->set_input(std::string_view(raw_.data(), n));
    co_return true;
  }

  http::Exchange& ex_;
  std::vector<char> raw_;
  std::vector<char> out_;
  std::unique_ptr<files::GzipDecoder> decoder_;
};

awaitable<void> upload(http::Exchange& ex, const FileEndpointDeps& d) {
  FileQuery q = read_query(ex);
  if (!q.expiration.error.empty()) {
    co_await settle_body(ex);
    co_await respond_text_error(ex, 400, q.expiration.error);
    co_return;
  }
  if (const std::string denied = check_signing(ex, q, d.state, files::SignOp::write); !denied.empty()) {
    co_await fail(ex, 401, denied);
    co_return;
  }
  const std::string username = q.username ? *q.username : d.state.default_user();

  const std::string encoding_header(ex.header("Content-Encoding"));
  const std::string encoding = files::request_content_encoding(encoding_header);
  const bool gzip = encoding == "gzip";
  if (!encoding_header.empty() && !gzip && encoding != "identity") {
    const std::string message = "error decompressing request body: unsupported Content-Encoding: " + encoding_header +
                                ", supported: [gzip]";
    co_await fail(ex, 400, message);
    co_return;
  }
  BodyReader body(ex, gzip);
  if (gzip) {
    std::string why = co_await body.read_gzip_header();
    if (!why.empty()) {
      const std::string message = "error decompressing request body: failed to create gzip reader: " + why;
      co_await fail(ex, 400, message);
      co_return;
    }
  }

  auto user = d.users.lookup(username);
  if (!user) {
    const std::string message = unknown_user(username);
    co_await fail(ex, 401, message);
    co_return;
  }

  std::vector<std::pair<std::string_view, std::string_view>> header_list;
  for (const auto& f : ex.headers()) {
    header_list.emplace_back(std::string_view(f.name_string().data(), f.name_string().size()),
                             std::string_view(f.value().data(), f.value().size()));
  }
  files::UploadOptions options;
  options.metadata = files::metadata_from_headers(header_list);
  if (const std::string invalid = files::validate_metadata(options.metadata); !invalid.empty()) {
    const std::string message = "invalid metadata: " + invalid;
    co_await fail(ex, 400, message);
    co_return;
  }
  options.user = *user;
  options.default_workdir = d.state.default_workdir();
  options.path_param = q.path;
  options.content_length = -1;
  if (auto cl = ex.header("Content-Length"); !cl.empty()) {
    std::int64_t v = 0;
    bool ok = true;
    for (char c : cl) {
      if (c < '0' || c > '9' || v > (INT64_MAX - 9) / 10) ok = false;
      else v = v * 10 + (c - '0');
    }
    if (ok) options.content_length = v;
  }

  files::TransferError refused;
  const std::string content_type(ex.header("Content-Type"));
  auto sink = files::make_upload_sink(content_type, std::move(options), refused);
  if (!sink) {
    co_await fail(ex, refused);
    co_return;
  }

  size_t since_yield = 0;
  for (;;) {
    std::string decode_error;
    std::string_view piece = co_await body.next(decode_error);
    if (!decode_error.empty()) {
      sink->fail_input(decode_error);
      break;
    }
    if (piece.empty()) {
      sink->finish();
      break;
    }
    if (!sink->write(piece)) break;
    since_yield += piece.size();
    if (since_yield >= kYieldEvery && gzip) {
      // Inflation can turn one read into a lot of disk work: let other requests in.
      since_yield = 0;
      co_await yield_now();
    }
  }
  if (sink->error()) {
    co_await fail(ex, sink->error());
    co_return;
  }
  std::string response = files::upload_response_json(sink->files());
  co_await ex.respond(200, "application/json", std::move(response));
}

// ---- POST /files/compose ----

awaitable<void> compose(http::Exchange& ex, const FileEndpointDeps& d) {
  auto body = co_await ex.read_body_all(kComposeBodyLimit);
  if (!body) {
    const std::string message = "invalid request body: http: request body too large";
    co_await respond_json_error(ex, 400, message);
    co_return;
  }
  files::ComposeRequest req;
  std::string parse_error;
  if (!files::parse_compose_request(*body, req, parse_error)) {
    co_await respond_json_error(ex, 400, parse_error);
    co_return;
  }
  if (auto e = files::check_compose_request(req)) {
    co_await respond_json_error(ex, e.status, e.message);
    co_return;
  }
  const std::string username = req.username ? *req.username : d.state.default_user();
  auto user = d.users.lookup(username);
  if (!user) {
    const std::string message = unknown_user(username);
    co_await respond_json_error(ex, 401, message);
    co_return;
  }
  files::TransferError error;
  auto job = files::ComposeJob::start(req, *user, d.state.default_workdir(), error);
  if (!job) {
    co_await respond_json_error(ex, error.status, error.message);
    co_return;
  }
  for (;;) {
    bool done = false;
    if (!job->step(kYieldEvery, done, error)) {
      co_await respond_json_error(ex, error.status, error.message);
      co_return;
    }
    if (done) break;
    co_await yield_now();
  }
  std::string response;
  if (!job->finish(response, error)) {
    co_await respond_json_error(ex, error.status, error.message);
    co_return;
  }
  co_await ex.respond(200, "application/json", std::move(response));
}

}  // namespace

void register_file_endpoints(http::Router& router, std::shared_ptr<FileEndpointDeps> deps) {
  router.add("GET", "/files", [deps](http::Exchange& ex) -> awaitable<void> { co_await download(ex, *deps); });
  router.add("POST", "/files", [deps](http::Exchange& ex) -> awaitable<void> { co_await upload(ex, *deps); });
  router.add("POST", "/files/compose", [deps](http::Exchange& ex) -> awaitable<void> { co_await compose(ex, *deps); });
}

}  // namespace cove::rest
