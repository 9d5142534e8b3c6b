#pragma once
// E2B's control-plane REST API (`api.<domain>`) as an HTTP handler: routing, the X-API-Key check,
// request parsing, lifecycle calls and response shapes. It speaks only to Lifecycle.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "http/server.hpp"
#include "lifecycle/lifecycle.hpp"
#include "lifecycle/template_builds.hpp"

namespace cove::shim::api {

struct ControlPlaneOptions {
  std::string domain;                         // `domain` when the lifecycle's view has none; empty → null
  size_t max_body_bytes = 1024 * 1024;        // larger request bodies get 413
  // Timeout for a v1 create that omits it (E2B's is 15 s). nullopt: the lifecycle's configured default.
  std::optional<int64_t> v1_default_timeout_s;
  std::string client_id = "6532622b";         // the deprecated `clientID` every sandbox reports
  TemplateBuilds* builds = nullptr;           // template builds; null → those endpoints answer 501
};

// The handler keeps a reference to `lifecycle`, which must outlive it.
http::Handler make_control_plane(Lifecycle& lifecycle, ControlPlaneOptions options);

}  // namespace cove::shim::api
