#include "rpc/connect.hpp"

#include <array>
#include <charconv>

namespace cove::rpc {
namespace {

std::string decode_error(const Message& prototype, const std::string& detail) {
  return "unmarshal into " + prototype.GetDescriptor()->full_name() + ": " + detail;
}

bool identity_encoding(std::string_view value) { return value.empty() || value == "identity"; }

}  // namespace

std::optional<std::chrono::milliseconds> parse_timeout_ms(std::string_view value) {
  if (value.empty() || value.size() > 10) return std::nullopt;
  uint64_t ms = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
  if (ec != std::errc() || ptr != value.data() + value.size()) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

std::chrono::seconds parse_keepalive(std::string_view value) {
  int64_t s = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
  if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || s <= 0) {
    return kDefaultKeepalive;
  }
  return std::chrono::seconds(s);
}

net::awaitable<bool> ServerStream::send(const Message& msg) {
  if (ctx_.exchange.peer_gone()) co_return false;
  co_return co_await ctx_.exchange.write_chunk(encode_envelope(0, encode_message(ctx_.codec, msg)));
}

net::awaitable<bool> ClientStream::next(Message& out, Status& error) {
  std::array<char, 16384> buf;
  for (;;) {
    Envelope env;
    switch (reader_.next(env)) {
      case EnvelopeReader::Result::envelope: {
        if (env.flags & kFlagCompressed) {
          error = {Code::internal, "protocol error: sent compressed message without compression support"};
          co_return false;
        }
        if (env.flags != 0) {
          error = {Code::invalid_argument, "protocol error: invalid envelope flags " + std::to_string(env.flags)};
          co_return false;
        }
        std::string detail;
        out.Clear();
        if (!decode_message(ctx_.codec, env.payload, out, &detail)) {
          error = {Code::invalid_argument, decode_error(out, detail)};
          co_return false;
        }
        co_return true;
      }
      case EnvelopeReader::Result::too_large:
        error = {Code::resource_exhausted, "message size " + std::to_string(reader_.declared_length()) +
                                               " is larger than configured max " +
                                               std::to_string(kMaxMessageBytes)};
        ctx_.exchange.close_after();
        co_return false;
      case EnvelopeReader::Result::need_more:
        break;
    }
    if (body_ended_) {
      if (reader_.pending() != 0) {
        error = {Code::invalid_argument, "protocol error: incomplete envelope: unexpected EOF"};
      }
      co_return false;
    }
    size_t n = 0;
    try {
      n = co_await ctx_.exchange.read_body_some(buf.data(), buf.size());
    } catch (const std::exception&) {
      error = {Code::canceled, "client closed the stream"};
      co_return false;
    }
    if (n == 0) {
      body_ended_ = true;
    } else {
      reader_.feed({buf.data(), n});
    }
  }
}

void ConnectRouter::add(std::string path, Kind kind, std::unique_ptr<Message> req, Invoke invoke,
                        std::unique_ptr<Message> resp) {
  methods_.emplace(std::move(path), Method{kind, std::move(req), std::move(resp), std::move(invoke)});
}

void ConnectRouter::set_stream_headers(std::string_view path, std::function<void(http::Exchange&)> fn) {
  auto it = methods_.find(path);
  if (it != methods_.end()) it->second.stream_headers = std::move(fn);
}

bool ConnectRouter::is_streaming(std::string_view path) const {
  auto it = methods_.find(path);
  return it != methods_.end() && it->second.kind != Kind::unary;
}

net::awaitable<void> ConnectRouter::reject(http::Exchange& exchange, bool streaming, Codec codec,
                                           const Status& status) {
  if (!streaming) {
    co_await exchange.respond(http_status(status.code), "application/json", error_json(status));
    co_return;
  }
  co_await exchange.begin_stream(200, content_type_for(codec, true));
  co_await exchange.write_chunk(encode_envelope(kFlagEndStream, end_stream_json(status)));
  co_await exchange.finish_stream();
}

net::awaitable<void> ConnectRouter::serve(http::Exchange& exchange) const {
  const Method& method = methods_.find(exchange.path())->second;
  if (exchange.method() != "POST") {
    exchange.response_headers().set(http::bhttp::field::allow, "POST");
    exchange.close_after();
    co_await exchange.respond(405, "", "");
    co_return;
  }
  if (method.kind == Kind::unary) {
    co_await serve_unary(exchange, method);
  } else {
    co_await serve_streaming(exchange, method);
  }
}

net::awaitable<void> ConnectRouter::serve_unary(http::Exchange& exchange, const Method& method) const {
  auto codec = codec_for_content_type(exchange.header("Content-Type"), false);
  if (!codec) {
    exchange.response_headers().set("Accept-Post", "application/json, application/proto");
    exchange.close_after();
    co_await exchange.respond(415, "", "");
    co_return;
  }
  CallContext ctx{exchange, *codec};
  if (!identity_encoding(exchange.header("Content-Encoding"))) {
    exchange.close_after();
    const Status status{Code::unimplemented, "unknown compression \"" +
                                                 std::string(exchange.header("Content-Encoding")) +
                                                 "\": supported encodings are identity"};
    co_await reject(exchange, false, *codec, status);
    co_return;
  }
  if (exchange.has_header("Connect-Timeout-Ms")) {
    ctx.timeout = parse_timeout_ms(exchange.header("Connect-Timeout-Ms"));
    if (!ctx.timeout) {
      exchange.close_after();
      const Status status{Code::invalid_argument, "protocol error: invalid timeout \"" +
                                                      std::string(exchange.header("Connect-Timeout-Ms")) + "\""};
      co_await reject(exchange, false, *codec, status);
      co_return;
    }
    ctx.deadline = Clock::now() + *ctx.timeout;
  }
  auto body = co_await exchange.read_body_all(kMaxMessageBytes);
  if (!body) {
    const Status status{Code::resource_exhausted,
                        "message is larger than configured max " + std::to_string(kMaxMessageBytes)};
    co_await reject(exchange, false, *codec, status);
    co_return;
  }
  std::unique_ptr<Message> request(method.request_prototype->New());
  std::string detail;
  if (!decode_message(*codec, *body, *request, &detail)) {
    const Status status{Code::invalid_argument, decode_error(*request, detail)};
    co_await reject(exchange, false, *codec, status);
    co_return;
  }
  std::unique_ptr<Message> response(method.response_prototype->New());
  Status status = co_await method.invoke(ctx, *request, *response, nullptr, nullptr);
  if (!status.ok()) {
    co_await reject(exchange, false, *codec, status);
    co_return;
  }
  co_await exchange.respond(200, content_type_for(*codec, false), encode_message(*codec, *response));
}

net::awaitable<void> ConnectRouter::serve_streaming(http::Exchange& exchange, const Method& method) const {
  auto codec = codec_for_content_type(exchange.header("Content-Type"), true);
  if (!codec) {
    exchange.response_headers().set("Accept-Post", "application/connect+json, application/connect+proto");
    exchange.close_after();
    co_await exchange.respond(415, "", "");
    co_return;
  }
  CallContext ctx{exchange, *codec};
  if (method.stream_headers) method.stream_headers(exchange);
  // From here on every outcome is HTTP 200 plus frames ending in an end-stream frame.
  co_await exchange.begin_stream(200, content_type_for(*codec, true));

  // Callers pass named Status objects only: GCC 12 destroys brace-initialised temporaries in a
  // co_await operand twice.
  auto finish = [&](const Status& status) -> net::awaitable<void> {
    co_await exchange.stop_watching_peer();
    if (!exchange.peer_gone()) {
      co_await exchange.write_chunk(encode_envelope(kFlagEndStream, end_stream_json(status)));
      co_await exchange.finish_stream();
    }
  };

  if (!identity_encoding(exchange.header("Connect-Content-Encoding"))) {
    exchange.close_after();
    const Status status{Code::unimplemented, "unknown compression \"" +
                                                 std::string(exchange.header("Connect-Content-Encoding")) +
                                                 "\": supported encodings are identity"};
    co_await finish(status);
    co_return;
  }
  if (exchange.has_header("Connect-Timeout-Ms")) {
    ctx.timeout = parse_timeout_ms(exchange.header("Connect-Timeout-Ms"));
    if (!ctx.timeout) {
      exchange.close_after();
      const Status status{Code::invalid_argument, "protocol error: invalid timeout \"" +
                                                      std::string(exchange.header("Connect-Timeout-Ms")) + "\""};
      co_await finish(status);
      co_return;
    }
    ctx.deadline = Clock::now() + *ctx.timeout;
  }
  ctx.keepalive_interval = parse_keepalive(exchange.header("Keepalive-Ping-Interval"));

  Status status;
  if (method.kind == Kind::server_stream) {
    // The request is exactly one envelope.
    ClientStream input(ctx);
    std::unique_ptr<Message> request(method.request_prototype->New());
    Status read_error;
    if (!co_await input.next(*request, read_error)) {
      if (read_error.ok()) read_error = {Code::invalid_argument, "protocol error: missing request message"};
      exchange.close_after();
      co_await finish(read_error);
      co_return;
    }
    std::unique_ptr<Message> extra(method.request_prototype->New());
    if (co_await input.next(*extra, read_error) || !read_error.ok()) {
      exchange.close_after();
      if (read_error.ok()) read_error = {Code::invalid_argument, "protocol error: expected exactly one request message"};
      co_await finish(read_error);
      co_return;
    }
    ServerStream stream(ctx);
    status = co_await method.invoke(ctx, *request, *request, &stream, nullptr);
  } else {
    ClientStream input(ctx);
    std::unique_ptr<Message> response(method.response_prototype->New());
    status = co_await method.invoke(ctx, *response, *response, nullptr, &input);
    if (!exchange.body_done()) exchange.close_after();
    if (status.ok()) {
      co_await exchange.write_chunk(encode_envelope(0, encode_message(*codec, *response)));
    }
  }
  co_await finish(status);
}

}  // namespace cove::rpc
