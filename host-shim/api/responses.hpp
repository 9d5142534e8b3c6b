#pragma once
// Lifecycle values → E2B's response schemas (openapi.yml plus the 2.51 additions). Pure.
#include <nlohmann/json.hpp>

#include <string>

#include "lifecycle/lifecycle.hpp"

namespace cove::shim::api {

// What every response shares.
struct ResponseContext {
  std::string client_id = "6532622b";  // deprecated `clientID`: required by the schema, read by no SDK
  std::string domain;                  // fallback when the view carries none; empty → null
};

// E2B's two states: transitional ones read as where they are heading from the client's side.
std::string_view wire_state(SandboxState state);

nlohmann::json sandbox_json(const SandboxView& view, const ResponseContext& context);         // Sandbox
nlohmann::json sandbox_detail_json(const SandboxView& view, const ResponseContext& context);  // SandboxDetail
nlohmann::json listed_sandbox_json(const SandboxView& view, const ResponseContext& context);  // ListedSandbox
nlohmann::json metric_json(const MetricSample& sample);                                       // SandboxMetric
nlohmann::json template_json(const Template& tmpl);                                           // Template
nlohmann::json template_alias_json(const Template& tmpl);                                     // TemplateAliasResponse
nlohmann::json snapshot_info_json(const Snapshot& snapshot);                                  // SnapshotInfo

// Text of a JSON response body (invalid UTF-8 replaced rather than thrown on).
std::string dump(const nlohmann::json& value);

}  // namespace cove::shim::api
