#pragma once
// Bodies of the template build API (e2b-sdk.md §2.3) → service requests; ApiError(400) on
// malformed input, never echoing it.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lifecycle/template_builds.hpp"

namespace cove::shim::api {

TemplateRegistration parse_template_registration(std::string_view body);
// POST /templates/tags {target:"name:tag", tags:[…]}
std::pair<std::string, std::vector<std::string>> parse_tags_assignment(std::string_view body);
// DELETE /templates/tags {name, tags:[…]}
std::pair<std::string, std::vector<std::string>> parse_tags_removal(std::string_view body);

nlohmann::json registered_build_json(const RegisteredBuild& build);
nlohmann::json build_status_json(const BuildStatusPage& page);
nlohmann::json template_tags_json(const std::vector<TemplateTag>& tags);

}  // namespace cove::shim::api
