#pragma once
// Templates and their builds as E2B's build API sees them (e2b-sdk.md §2.3): register a name,
// upload COPY contexts, start a build, poll its status and logs, resolve aliases, tag builds,
// delete. Handlers speak to this interface; TemplateService implements it over the store, the
// sandbox lifecycle (build steps run in real sandboxes) and the layer store.
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lifecycle/errors.hpp"
#include "rootfs-builder/build_plan.hpp"
#include "store/records.hpp"

namespace cove::shim {

namespace net = boost::asio;

struct TemplateRegistration {
  std::string name;                 // alias; may carry ":tag"
  std::vector<std::string> tags;
  std::optional<int> cpu_count;
  std::optional<int> memory_mb;
};

struct RegisteredBuild {
  std::string template_id;
  std::string build_id;
  std::vector<std::string> names;   // aliases
  std::vector<std::string> tags;
  bool is_public = false;
};

struct UploadLink {
  bool present = false;
  std::string upload_target;        // path and query on the API host ("" when present)
};

struct BuildStatusPage {
  std::string template_id;
  std::string build_id;
  BuildStatus status = BuildStatus::waiting;
  std::vector<BuildLogEntry> entries;  // from the requested offset on
  std::string reason;
  std::string reason_step;
};

enum class AliasVisibility { missing, forbidden, visible };

class TemplateBuilds {
 public:
  virtual ~TemplateBuilds() = default;

  virtual RegisteredBuild register_template(const std::string& team_id, const TemplateRegistration& registration) = 0;
  virtual UploadLink files(const std::string& team_id, const std::string& template_id, const std::string& hash) = 0;
  // The PUT of a context tar (no API key: the link's token). `read_some` yields body pieces
  // (0 = end); the body is kept only if it is a readable tar within the size limit.
  virtual net::awaitable<void> upload(const std::string& template_id, const std::string& hash, const std::string& token,
                                      std::function<net::awaitable<size_t>(char*, size_t)> read_some) = 0;
  // Queues the build (202); LifecycleError for unknown templates/builds or a bad plan.
  virtual void start_build(const std::string& team_id, const std::string& template_id, const std::string& build_id,
                           builder::BuildPlan plan) = 0;
  virtual BuildStatusPage status(const std::string& team_id, const std::string& template_id,
                                 const std::string& build_id, size_t logs_offset) = 0;
  virtual std::pair<AliasVisibility, std::optional<Template>> alias(const std::string& team_id, const std::string& alias) = 0;
  virtual std::vector<Template> list(const std::string& team_id) = 0;
  // Refused (409) while a running sandbox uses it.
  virtual void remove(const std::string& team_id, const std::string& template_id) = 0;
  // target "name:tag" → {build id, tags assigned}.
  virtual std::pair<std::string, std::vector<std::string>> assign_tags(const std::string& team_id, const std::string& target,
                                                                      const std::vector<std::string>& tags) = 0;
  virtual void remove_tags(const std::string& team_id, const std::string& name, const std::vector<std::string>& tags) = 0;
  virtual std::vector<TemplateTag> tags(const std::string& team_id, const std::string& template_id) = 0;
};

}  // namespace cove::shim
