#pragma once
// Serves Connect-protocol RPCs over an http::Exchange: unary (application/json|proto), server
// streaming and client streaming (application/connect+json|proto). Handlers see typed messages
// and return a Status; this layer owns framing, codecs, deadlines and the end-stream frame.
#include <google/protobuf/message.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "async/event.hpp"
#include "http/exchange.hpp"
#include "rpc/codec.hpp"
#include "rpc/envelope.hpp"
#include "rpc/status.hpp"

namespace cove::rpc {

namespace net = boost::asio;
using Message = google::protobuf::Message;
using Clock = async::Clock;

inline constexpr size_t kMaxMessageBytes = 32 * 1024 * 1024;
inline constexpr std::chrono::seconds kDefaultKeepalive{90};

struct CallContext {
  http::Exchange& exchange;
  Codec codec = Codec::json;
  // From Connect-Timeout-Ms: the call's deadline (for Process.Start also the process lifetime).
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<Clock::time_point> deadline;
  // From Keepalive-Ping-Interval (server streams).
  std::chrono::seconds keepalive_interval = kDefaultKeepalive;
};

class ServerStream {
 public:
  ServerStream(CallContext& ctx) : ctx_(ctx) {}
  // Writes one message frame; false once the client is gone.
  net::awaitable<bool> send(const Message& msg);
  // Watches the connection so `wake` is notified the moment the client disconnects.
  void wake_on_disconnect(async::Event* wake) { ctx_.exchange.watch_peer(wake); }
  bool client_gone() const { return ctx_.exchange.peer_gone(); }

 private:
  CallContext& ctx_;
};

class ClientStream {
 public:
  ClientStream(CallContext& ctx) : ctx_(ctx), reader_(kMaxMessageBytes) {}
  // Next message into `out`; false at the clean end of the stream or on error (then `error` set).
  net::awaitable<bool> next(Message& out, Status& error);

 private:
  CallContext& ctx_;
  EnvelopeReader reader_;
  bool body_ended_ = false;
};

// Typed handler signatures.
template <typename Req, typename Resp>
using UnaryFn = std::function<net::awaitable<Status>(CallContext&, const Req&, Resp&)>;
template <typename Req>
using ServerStreamFn = std::function<net::awaitable<Status>(CallContext&, const Req&, ServerStream&)>;
template <typename Req, typename Resp>
using ClientStreamFn = std::function<net::awaitable<Status>(CallContext&, ClientStream&, Resp&)>;

class ConnectRouter {
 public:
  template <typename Req, typename Resp>
  void unary(std::string path, UnaryFn<Req, Resp> fn) {
    add(std::move(path), Kind::unary, std::make_unique<Req>(),
        [fn](CallContext& c, const Message& req, Message& resp, ServerStream*, ClientStream*) {
          return fn(c, static_cast<const Req&>(req), static_cast<Resp&>(resp));
        },
        std::make_unique<Resp>());
  }
  template <typename Req>
  void server_stream(std::string path, ServerStreamFn<Req> fn) {
    add(std::move(path), Kind::server_stream, std::make_unique<Req>(),
        [fn](CallContext& c, const Message& req, Message&, ServerStream* s, ClientStream*) {
          return fn(c, static_cast<const Req&>(req), *s);
        },
        nullptr);
  }
  template <typename Req, typename Resp>
  void client_stream(std::string path, ClientStreamFn<Req, Resp> fn) {
    add(std::move(path), Kind::client_stream, std::make_unique<Req>(),
        [fn](CallContext& c, const Message&, Message& resp, ServerStream*, ClientStream* s) {
          return fn(c, *s, static_cast<Resp&>(resp));
        },
        std::make_unique<Resp>());
  }

  // For a streaming method: sets response headers before they go out, which happens before its
  // handler runs (e.g. envd's legacy-SDK marker on Filesystem.WatchDir).
  void set_stream_headers(std::string_view path, std::function<void(http::Exchange&)> fn);

  bool handles(std::string_view path) const { return methods_.count(std::string(path)) > 0; }
  // Whether `path` is a streaming method (errors then go in an end-stream frame).
  bool is_streaming(std::string_view path) const;

  // Serves the exchange; `path` must satisfy handles().
  net::awaitable<void> serve(http::Exchange& exchange) const;

  // Answers an error in the shape the method's protocol expects, before any handler ran.
  static net::awaitable<void> reject(http::Exchange& exchange, bool streaming, Codec codec,
                                     const Status& status);

 private:
  enum class Kind { unary, server_stream, client_stream };
  using Invoke = std::function<net::awaitable<Status>(CallContext&, const Message&, Message&,
                                                      ServerStream*, ClientStream*)>;
  struct Method {
    Kind kind;
    std::unique_ptr<Message> request_prototype;
    std::unique_ptr<Message> response_prototype;
    Invoke invoke;
    std::function<void(http::Exchange&)> stream_headers;
  };
  void add(std::string path, Kind kind, std::unique_ptr<Message> req, Invoke invoke,
           std::unique_ptr<Message> resp);
  net::awaitable<void> serve_unary(http::Exchange&, const Method&) const;
  net::awaitable<void> serve_streaming(http::Exchange&, const Method&) const;

  std::map<std::string, Method, std::less<>> methods_;
};

// Parses Connect-Timeout-Ms (at most 10 ASCII digits). nullopt for an invalid value.
std::optional<std::chrono::milliseconds> parse_timeout_ms(std::string_view value);
// Parses Keepalive-Ping-Interval seconds; anything invalid means the 90 s default.
std::chrono::seconds parse_keepalive(std::string_view value);

}  // namespace cove::rpc
