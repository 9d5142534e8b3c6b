#pragma once
// Connect error codes (connectrpc.com/docs/protocol) and their HTTP mapping for unary calls.
#include <string>
#include <string_view>

namespace cove::rpc {

enum class Code {
  ok = 0,
  canceled,
  unknown,
  invalid_argument,
  deadline_exceeded,
  not_found,
  already_exists,
  permission_denied,
  resource_exhausted,
  failed_precondition,
  aborted,
  out_of_range,
  unimplemented,
  internal,
  unavailable,
  data_loss,
  unauthenticated,
};

std::string_view code_name(Code code);
int http_status(Code code);

struct Status {
  Code code = Code::ok;
  std::string message;

  bool ok() const { return code == Code::ok; }
  static Status Ok() { return {}; }
};

inline Status error(Code code, std::string message) { return {code, std::move(message)}; }

// `{"code":"not_found","message":"..."}`: the body of a unary error and the `error` of an
// end-stream frame.
std::string error_json(const Status& status);
// The end-stream frame payload: `{}` or `{"error":{...}}`.
std::string end_stream_json(const Status& status);

}  // namespace cove::rpc
