#include "rpc/filesystem_service.hpp"

namespace cove::rpc {

void register_filesystem_service(ConnectRouter& router, FilesystemServiceDeps deps) {
  (void)router;
  (void)deps;
}

}  // namespace cove::rpc
