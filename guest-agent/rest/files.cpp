#include "rest/files.hpp"

namespace cove::rest {

void register_file_endpoints(http::Router& router, std::shared_ptr<FileEndpointDeps> deps) {
  (void)router;
  (void)deps;
}

}  // namespace cove::rest
