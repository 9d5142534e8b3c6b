#pragma once
// TemplateBuilds over the store, the sandbox manager and the layer store. A build runs as a
// coroutine on the io executor: each RUN step in a build sandbox (a real sandbox of the builder
// team started from the layers so far, whose writable layer becomes the step's layer), each COPY
// on a worker thread straight into a new layer, and a finalize step that checks the start and
// ready commands. Layers are keyed by what made them, so unchanged steps are cache hits.
// At most `max_concurrent_builds` run at once; the rest wait in order.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>

#include "auth/tokens.hpp"
#include "lifecycle/sandbox_manager.hpp"
#include "lifecycle/template_builds.hpp"
#include "rootfs-builder/layer_store.hpp"
#include "store/store.hpp"

namespace cove::shim {

struct TemplateServiceOptions {
  std::string state_dir;            // build-files/ (and layers/ by default) live here
  std::string layers_dir;           // the content-addressed layer store ("" = <state_dir>/layers); may be
                                    // shared by several shims: layers only ever appear, atomically
  std::string envd_version;         // recorded on every built template
  size_t max_concurrent_builds = 1;
  uint64_t max_upload_bytes = uint64_t{1} << 30;
  std::chrono::milliseconds ready_limit{600000};  // finalize: the ready command must pass within it
  uint16_t agent_port = 49983;
  std::string registry_ca;          // extra trust for image pulls (PEM file), "" = none
  int64_t step_timeout_s = 3600;    // lifetime of a build sandbox (one step)
};

class TemplateService final : public TemplateBuilds {
 public:
  TemplateService(net::any_io_executor io, Store& store, SandboxManager& sandboxes, TokenIssuer tokens,
                  TemplateServiceOptions options);
  ~TemplateService() override;

  RegisteredBuild register_template(const std::string& team_id, const TemplateRegistration& registration) override;
  UploadLink files(const std::string& team_id, const std::string& template_id, const std::string& hash) override;
  net::awaitable<void> upload(const std::string& template_id, const std::string& hash, const std::string& token,
                              std::function<net::awaitable<size_t>(char*, size_t)> read_some) override;
  void start_build(const std::string& team_id, const std::string& template_id, const std::string& build_id,
                   builder::BuildPlan plan) override;
  BuildStatusPage status(const std::string& team_id, const std::string& template_id, const std::string& build_id,
                         size_t logs_offset) override;
  std::pair<AliasVisibility, std::optional<Template>> alias(const std::string& team_id, const std::string& alias) override;
  std::vector<Template> list(const std::string& team_id) override;
  void remove(const std::string& team_id, const std::string& template_id) override;
  std::pair<std::string, std::vector<std::string>> assign_tags(const std::string& team_id, const std::string& target,
                                                              const std::vector<std::string>& tags) override;
  void remove_tags(const std::string& team_id, const std::string& name, const std::vector<std::string>& tags) override;
  std::vector<TemplateTag> tags(const std::string& team_id, const std::string& template_id) override;

  // Built-in templates (operator only, through the admin socket): public, no team, the
  // template id is the definition's name; `fromDebian` is allowed as a source.
  RegisteredBuild register_builtin(const builder::TemplateDefinition& definition);
  void start_builtin_build(const std::string& template_id, const std::string& build_id, builder::BuildPlan plan);
  BuildStatusPage builtin_status(const std::string& template_id, const std::string& build_id, size_t logs_offset);

  // Tests and benchmarks: the layer store in use.
  const builder::LayerStore& layers() const { return layers_; }

 private:
  struct Job {
    std::string team_id;
    std::string template_id;
    std::string build_id;
    builder::BuildPlan plan;
  };
  struct ActiveBuild {
    TemplateBuild record;
    std::vector<std::string> tags;  // to assign once ready
    std::optional<int> cpu_count, memory_mb, disk_size_mb;
  };
  class Run;

  // The template `template_id` (or alias) of `team_id`; with `builtin`, of no team instead.
  Template owned_template(const std::string& team_id, const std::string& template_id, bool builtin = false);
  // A new waiting build of the template (stored, and tracked until it finishes); its id.
  std::string new_build(const std::string& template_id, ActiveBuild active);
  void queue_build(const std::string& team_id, const Template& tpl, const std::string& build_id, builder::BuildPlan plan);
  BuildStatusPage status_of(const Template& tpl, const std::string& build_id, size_t logs_offset);
  std::string upload_token(const std::string& template_id, const std::string& hash) const;
  std::string archive_path(const std::string& template_id, const std::string& hash) const;
  void pump();
  net::awaitable<void> collect_garbage();
  net::awaitable<void> run(Job job);

  net::any_io_executor io_;
  Store& store_;
  SandboxManager& sandboxes_;
  TokenIssuer tokens_;
  TemplateServiceOptions options_;
  builder::LayerStore layers_;
  boost::asio::thread_pool pool_{2};
  std::map<std::string, ActiveBuild> active_;  // by build id, until finished
  std::deque<Job> queue_;
  size_t running_ = 0;
  bool collecting_ = false;  // a layer sweep runs; builds start after it
  std::atomic<bool> stopping_{false};
};

}  // namespace cove::shim
