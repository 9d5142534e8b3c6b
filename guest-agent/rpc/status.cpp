#include "rpc/status.hpp"

#include <nlohmann/json.hpp>

namespace cove::rpc {

std::string_view code_name(Code code) {
  switch (code) {
    case Code::ok: return "ok";
    case Code::canceled: return "canceled";
    case Code::unknown: return "unknown";
    case Code::invalid_argument: return "invalid_argument";
    case Code::deadline_exceeded: return "deadline_exceeded";
    case Code::not_found: return "not_found";
    case Code::already_exists: return "already_exists";
    case Code::permission_denied: return "permission_denied";
    case Code::resource_exhausted: return "resource_exhausted";
    case Code::failed_precondition: return "failed_precondition";
    case Code::aborted: return "aborted";
    case Code::out_of_range: return "out_of_range";
    case Code::unimplemented: return "unimplemented";
    case Code::internal: return "internal";
    case Code::unavailable: return "unavailable";
    case Code::data_loss: return "data_loss";
    case Code::unauthenticated: return "unauthenticated";
  }
  return "unknown";
}

int http_status(Code code) {
  switch (code) {
    case Code::ok: return 200;
    case Code::canceled: return 499;
    case Code::unknown: return 500;
    case Code::invalid_argument: return 400;
    case Code::deadline_exceeded: return 504;
    case Code::not_found: return 404;
    case Code::already_exists: return 409;
    case Code::permission_denied: return 403;
    case Code::resource_exhausted: return 429;
    case Code::failed_precondition: return 400;
    case Code::aborted: return 409;
    case Code::out_of_range: return 400;
    case Code::unimplemented: return 501;
    case Code::internal: return 500;
    case Code::unavailable: return 503;
    case Code::data_loss: return 500;
    case Code::unauthenticated: return 401;
  }
  return 500;
}

static nlohmann::json error_object(const Status& status) {
  nlohmann::json j{{"code", code_name(status.code)}};
  if (!status.message.empty()) j["message"] = status.message;
  return j;
}

std::string error_json(const Status& status) {
  // Invalid UTF-8 (e.g. from a user-supplied path) is replaced rather than thrown on.
  return error_object(status).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string end_stream_json(const Status& status) {
  if (status.ok()) return "{}";
  nlohmann::json j{{"error", error_object(status)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cove::rpc
