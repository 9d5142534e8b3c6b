#include "cli/template_build.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/admin.hpp"

namespace cove::shim {

int template_build(const Config& config, const std::string& dir) {
  std::ifstream in(dir + "/template.json");
  if (!in) {
    std::fprintf(stderr, "cove: no template.json in %s\n", dir.c_str());
    return 1;
  }
  std::stringstream definition;
  definition << in.rdbuf();
  auto [status, body] = admin_request(config.state_dir, "POST", "/templates", definition.str());
  nlohmann::json started = nlohmann::json::parse(body, nullptr, false);
  if (status != 202 || !started.is_object() || !started.contains("buildID")) {
    std::string message = started.is_object() ? started.value("message", body) : body;
    std::fprintf(stderr, "cove: the build was refused: %s\n", message.c_str());
    return 1;
  }
  std::string id = started["templateID"].get<std::string>();
  std::string build = started["buildID"].get<std::string>();
  std::printf("building template %s (build %s)\n", id.c_str(), build.c_str());
  size_t offset = 0;
  for (;;) {
    auto [code, text] =
        admin_request(config.state_dir, "GET", "/templates/" + id + "/builds/" + build + "/status?logsOffset=" + std::to_string(offset));
    nlohmann::json page = nlohmann::json::parse(text, nullptr, false);
    if (code != 200 || !page.is_object()) {
      std::fprintf(stderr, "cove: cannot read the build status (%u)\n", code);
      return 1;
    }
    for (const auto& e : page["logEntries"]) {
      std::printf("%s %s\n", e.value("timestamp", "").c_str(), e.value("message", "").c_str());
      ++offset;
    }
    std::fflush(stdout);
    std::string state = page.value("status", "");
    if (state == "ready" && page["logEntries"].empty()) return 0;
    if (state == "error" && page["logEntries"].empty()) {
      std::fprintf(stderr, "cove: build failed: %s\n", page["reason"].value("message", "").c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace cove::shim
