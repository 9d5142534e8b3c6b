#pragma once
// E2B's error shape: `{"code": <HTTP status>, "message": "..."}`. The SDK branches on the body's
// `code`, so it always equals the status. Messages never echo request bodies or keys.
#include <stdexcept>
#include <string>

namespace cove::shim::api {

// A request the API itself refuses (bad JSON, wrong types, unimplemented feature…).
struct ApiError : std::runtime_error {
  ApiError(int status, const std::string& message) : std::runtime_error(message), status(status) {}
  int status;
};

inline ApiError bad_request(const std::string& message) { return ApiError(400, message); }

// `{"code":status,"message":message}` as text.
std::string error_body(int status, const std::string& message);

}  // namespace cove::shim::api
