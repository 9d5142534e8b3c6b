#include "api/errors.hpp"

#include <nlohmann/json.hpp>

namespace cove::shim::api {

std::string error_body(int status, const std::string& message) {
  nlohmann::json body{{"code", status}, {"message", message}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cove::shim::api
