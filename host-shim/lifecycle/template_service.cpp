#include "lifecycle/template_service.hpp"

#include "text/shell_quote.hpp"
#include "text/uuid.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <filesystem>
#include <set>

#include "auth/random.hpp"
#include "lifecycle/agent_commands.hpp"
#include "lifecycle/blocking.hpp"
#include "rootfs-builder/copy_step.hpp"
#include "rootfs-builder/debian_source.hpp"
#include "rootfs-builder/image_pull.hpp"
#include "rootfs-builder/tar_reader.hpp"

namespace cove::shim {
namespace fs = std::filesystem;
namespace {

// Why a build stopped, and at which step ("base", "<1-based index>", "finalize").
struct BuildFailure : std::runtime_error {
  BuildFailure(std::string step, const std::string& message) : std::runtime_error(message), step(std::move(step)) {}
  std::string step;
};

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) return false;
  }
  return name.front() != '-' && name.front() != '.';
}

bool valid_template_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}


// Command output → log lines (a partial last line waits for the rest).
class LineSplitter {
 public:
  explicit LineSplitter(std::function<void(std::string)> emit) : emit_(std::move(emit)) {}
  void feed(std::string_view text) {
    pending_.append(text);
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      emit_(pending_.substr(start, nl - start));
    }
    pending_.erase(0, start);
    if (pending_.size() > 16384) {  // a line without end: cut it
      emit_(pending_);
      pending_.clear();
    }
  }
  void flush() {
    if (!pending_.empty()) emit_(pending_);
    pending_.clear();
  }

 private:
  std::function<void(std::string)> emit_;
  std::string pending_;
};

}  // namespace

TemplateService::TemplateService(net::any_io_executor io, Store& store, SandboxManager& sandboxes, TokenIssuer tokens,
                                 TemplateServiceOptions options)
    : io_(std::move(io)),
      store_(store),
      sandboxes_(sandboxes),
      tokens_(std::move(tokens)),
      options_(std::move(options)),
      layers_(options_.layers_dir.empty() ? options_.state_dir + "/layers" : options_.layers_dir) {
  layers_.remove_staging_leftovers();
  // A restart ends every build that was running: say so where clients poll.
  for (auto& build : store_.unfinished_builds()) {
    build.status = BuildStatus::error;
    build.reason = "The build was interrupted by a restart of the shim";
    build.reason_step = "base";
    build.logs.push_back({Clock::now(), "error", build.reason, ""});
    build.finished_at = Clock::now();
    store_.upsert_build(build);
  }
  fs::create_directories(options_.state_dir + "/build-files");
  ::chmod((options_.state_dir + "/build-files").c_str(), 0700);
}

TemplateService::~TemplateService() {
  stopping_ = true;  // a debootstrap in flight ends rather than holding the shim's exit
  pool_.join();
}

Template TemplateService::owned_template(const std::string& team_id, const std::string& template_id, bool builtin) {
  auto tpl = valid_template_id(template_id) ? store_.template_by_id_or_alias(template_id) : std::nullopt;
  bool owned = tpl && (builtin ? tpl->team_id.empty() : !tpl->team_id.empty() && tpl->team_id == team_id);
  if (!owned) {
    throw LifecycleError(LifecycleErrc::not_found, "Template '" + template_id.substr(0, 128) + "' not found");
  }
  return *tpl;
}

RegisteredBuild TemplateService::register_template(const std::string& team_id, const TemplateRegistration& reg) {
  std::string name = reg.name;
  std::vector<std::string> tags = reg.tags;
  if (auto colon = name.find(':'); colon != std::string::npos) {
    tags.push_back(name.substr(colon + 1));
    name = name.substr(0, colon);
  }
  if (!valid_name(name)) {
    throw LifecycleError(LifecycleErrc::bad_request,
                         "Template name must be 1-128 lowercase letters, digits, '-', '_' or '.'");
  }
  for (const auto& tag : tags) {
    if (!valid_name(tag)) throw LifecycleError(LifecycleErrc::bad_request, "Invalid tag");
  }
  if (reg.cpu_count && (*reg.cpu_count < 1 || *reg.cpu_count > 64)) {
    throw LifecycleError(LifecycleErrc::bad_request, "cpuCount must be between 1 and 64");
  }
  if (reg.memory_mb && (*reg.memory_mb < 128 || *reg.memory_mb > 262144)) {
    throw LifecycleError(LifecycleErrc::bad_request, "memoryMB must be between 128 and 262144");
  }
  auto existing = store_.template_by_id_or_alias(name);
  Template tpl;
  if (existing) {
    if (existing->team_id != team_id || existing->team_id.empty()) {
      throw LifecycleError(LifecycleErrc::conflict, "Template name '" + name + "' is already taken");
    }
    tpl = *existing;
  } else {
    tpl.id = random_lowercase_alnum(20);
    tpl.aliases = {name};
    tpl.team_id = team_id;
    tpl.envd_version = options_.envd_version;
    tpl.created_at = tpl.updated_at = Clock::now();
    store_.upsert_template(tpl);
  }
  std::string build_id = new_build(tpl.id, ActiveBuild{{}, tags, reg.cpu_count, reg.memory_mb, std::nullopt});
  return RegisteredBuild{tpl.id, build_id, tpl.aliases, tags, tpl.is_public};
}

std::string TemplateService::new_build(const std::string& template_id, ActiveBuild active) {
  TemplateBuild& build = active.record;
  build.template_id = template_id;
  build.build_id = text::random_uuid4();
  build.status = BuildStatus::waiting;
  build.created_at = Clock::now();
  store_.upsert_build(build);
  std::string id = build.build_id;
  active_.emplace(id, std::move(active));
  return id;
}

std::string TemplateService::upload_token(const std::string& template_id, const std::string& hash) const {
  // Derived like the sandbox tokens (HMAC of the node seed), so nothing is stored.
  return tokens_.envd_access_token("template-upload/" + template_id + "/" + hash);
}

std::string TemplateService::archive_path(const std::string& template_id, const std::string& hash) const {
  return options_.state_dir + "/build-files/" + template_id + "/" + hash + ".tar";
}

UploadLink TemplateService::files(const std::string& team_id, const std::string& template_id, const std::string& hash) {
  Template tpl = owned_template(team_id, template_id);
  if (!builder::valid_files_hash(hash)) throw LifecycleError(LifecycleErrc::bad_request, "Invalid files hash");
  if (fs::exists(archive_path(tpl.id, hash))) return UploadLink{true, ""};
  return UploadLink{false, "/templates/" + tpl.id + "/files/" + hash + "/upload?token=" + upload_token(tpl.id, hash)};
}

net::awaitable<void> TemplateService::upload(const std::string& template_id, const std::string& hash,
                                             const std::string& token,
                                             std::function<net::awaitable<size_t>(char*, size_t)> read_some) {
  if (!valid_template_id(template_id) || !builder::valid_files_hash(hash) ||
      !secrets_equal(token, upload_token(template_id, hash))) {
    throw LifecycleError(LifecycleErrc::unauthorized, "Invalid or expired upload link");
  }
  std::string dir = options_.state_dir + "/build-files/" + template_id;
  fs::create_directories(dir);
  std::string part = dir + "/.upload-" + random_lowercase_alnum(12);
  int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw LifecycleError(LifecycleErrc::internal, "Cannot store the upload");
  uint64_t total = 0;
  std::vector<char> piece(256 * 1024);
  bool ok = true;
  std::string failure;
  try {
    for (;;) {
      size_t n = co_await read_some(piece.data(), piece.size());
      if (n == 0) break;
      total += n;
      if (total > options_.max_upload_bytes) {
        failure = "The upload is larger than the limit of " + std::to_string(options_.max_upload_bytes >> 20) + " MiB";
        ok = false;
        break;
      }
      if (::write(fd, piece.data(), n) != static_cast<ssize_t>(n)) {
        failure = "Cannot store the upload";
        ok = false;
        break;
      }
    }
  } catch (...) {
    ::close(fd);
    ::unlink(part.c_str());
    throw;
  }
  ::close(fd);
  if (ok) {
    // Only a readable archive is kept: a bad one fails here, not in the middle of a build.
    auto check = [part] {
      builder::TarReader reader(part);
      while (reader.next()) {
      }
    };
    try {
      co_await run_blocking(pool_, std::move(check));
    } catch (const builder::TarError& e) {
      failure = std::string("The upload is not a valid tar archive: ") + e.what();
      ok = false;
    }
  }
  if (!ok) {
    ::unlink(part.c_str());
    throw LifecycleError(LifecycleErrc::bad_request, failure);
  }
  if (::rename(part.c_str(), archive_path(template_id, hash).c_str()) != 0) {
    ::unlink(part.c_str());
    throw LifecycleError(LifecycleErrc::internal, "Cannot store the upload");
  }
}

RegisteredBuild TemplateService::register_builtin(const builder::TemplateDefinition& def) {
  if (!valid_name(def.name)) throw LifecycleError(LifecycleErrc::bad_request, "Invalid template name");
  auto existing = store_.template_by_id_or_alias(def.name);
  Template tpl;
  if (existing) {
    if (!existing->team_id.empty()) {
      throw LifecycleError(LifecycleErrc::conflict, "Template name '" + def.name + "' belongs to a team");
    }
    tpl = *existing;
  } else {
    tpl.id = def.name;
    tpl.aliases = {def.name};
    tpl.is_public = true;
    tpl.envd_version = options_.envd_version;
    tpl.created_at = tpl.updated_at = Clock::now();
    store_.upsert_template(tpl);
  }
  std::string build_id = new_build(tpl.id, ActiveBuild{{}, {}, def.cpu_count, def.memory_mb, def.disk_size_mb});
  return RegisteredBuild{tpl.id, build_id, tpl.aliases, {}, true};
}

void TemplateService::start_builtin_build(const std::string& template_id, const std::string& build_id,
                                          builder::BuildPlan plan) {
  Template tpl = owned_template("", template_id, true);
  queue_build("", tpl, build_id, std::move(plan));
}

BuildStatusPage TemplateService::builtin_status(const std::string& template_id, const std::string& build_id,
                                                size_t logs_offset) {
  return status_of(owned_template("", template_id, true), build_id, logs_offset);
}

void TemplateService::start_build(const std::string& team_id, const std::string& template_id,
                                  const std::string& build_id, builder::BuildPlan plan) {
  if (!plan.from_debian.empty()) throw LifecycleError(LifecycleErrc::bad_request, "fromDebian is for built-in templates");
  queue_build(team_id, owned_template(team_id, template_id), build_id, std::move(plan));
}

void TemplateService::queue_build(const std::string& team_id, const Template& tpl, const std::string& build_id,
                                  builder::BuildPlan plan) {
  auto it = active_.find(build_id);
  if (it == active_.end() || it->second.record.template_id != tpl.id) {
    throw LifecycleError(LifecycleErrc::not_found, "Build '" + build_id.substr(0, 64) + "' not found");
  }
  if (it->second.record.status != BuildStatus::waiting) {
    throw LifecycleError(LifecycleErrc::conflict, "The build has started already");
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto& step = plan.steps[i];
    if (step.kind == builder::StepKind::copy && !fs::exists(archive_path(tpl.id, step.files_hash))) {
      throw LifecycleError(LifecycleErrc::bad_request,
                           "Step " + std::to_string(i + 1) + ": the files of this COPY were not uploaded");
    }
  }
  it->second.record.status = BuildStatus::building;  // accepted: no second start
  queue_.push_back(Job{team_id, tpl.id, build_id, std::move(plan)});
  pump();
}

void TemplateService::pump() {
  while (!collecting_ && running_ < options_.max_concurrent_builds && !queue_.empty()) {
    ++running_;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    net::co_spawn(io_, run(std::move(job)), net::detached);
  }
}

// One build's steps. Lives in the coroutine frame of TemplateService::run.
class TemplateService::Run {
 public:
  Run(TemplateService& service, Job& job) : s_(service), job_(job) {}

  net::awaitable<Template> execute() {
    const auto& plan = job_.plan;
    std::string base_ref = plan.from_template;
    // The SDK's default base (`Template()` with no source) is E2B's own base image: ours.
    bool pull = !plan.from_image.empty() && plan.from_image != "e2bdev/base" && plan.from_image != "e2bdev/base:latest";
    if (!plan.from_image.empty() && !pull) base_ref = "base";
    std::optional<Template> base;
    if (pull) {
      builder::RegistryOptions registry;
      registry.ca_file = s_.options_.registry_ca;
      auto progress = [this](const std::string& line) { post_log("info", line, "base"); };
      auto fetch = [ref = plan.from_image, credentials = plan.registry, registry, this, progress] {
        return builder::pull_image(ref, credentials, s_.layers_, registry, progress);
      };
      try {
        builder::PulledImage image = co_await run_blocking(s_.pool_, std::move(fetch));
        base = Template{};
        base->layers = image.layers;
        base->env = image.config.env;
        base->workdir = image.config.workdir;
        // An image's default user, root if it names none (images rarely have our `user`).
        base->user = image.config.user.empty() ? "root" : image.config.user;
        base_ref = image.reference;
      } catch (const std::exception& e) {
        throw BuildFailure("base", std::string("Cannot pull the image: ") + e.what());
      }
    } else if (!plan.from_debian.empty()) {
      builder::DebianSource source{plan.from_debian, ""};
      auto progress = [this](const std::string& line) { post_log("info", line, "base"); };
      auto make = [source, this, progress] { return builder::debian_layer(source, s_.layers_, progress, s_.stopping_); };
      try {
        std::string layer = co_await run_blocking(s_.pool_, std::move(make));
        base = Template{};
        base->layers = {layer};
      } catch (const std::exception& e) {
        throw BuildFailure("base", e.what());
      }
      base_ref = "debian:" + plan.from_debian;
    } else {
      base = s_.sandboxes_.startable_template(job_.team_id, base_ref);
      if (!base || base->layers.empty()) throw BuildFailure("base", "Base template '" + base_ref.substr(0, 128) + "' not found");
    }
    log("info", "FROM " + base_ref, "base");
    layers_ = base->layers;
    context_.env = base->env;
    context_.workdir = base->workdir;
    std::string final_user = base->user;
    std::string key = builder::base_layer_key(layers_);
    bool cached = !plan.force;
    const size_t n = plan.steps.size();
    for (size_t i = 0; i < n; ++i) {
      const auto& step = plan.steps[i];
      std::string index = std::to_string(i + 1);
      std::string label = "[builder " + index + "/" + std::to_string(n) + "] " + builder::describe(step);
      if (!builder::makes_layer(step)) {
        builder::apply_context_step(step, context_);
        if (step.kind == builder::StepKind::user) final_user = context_.user;
        log("info", (cached ? "CACHED " : "") + label, index);
        continue;
      }
      key = builder::layer_key(key, step, context_);
      bool forced = plan.force || step.force;
      if (forced) key = builder::forced_layer_key(key, job_.build_id);
      if (!forced && s_.layers_.has(key)) {
        log("info", "CACHED " + label + " [" + key.substr(0, 12) + "]", index);
        layers_.insert(layers_.begin(), s_.layers_.path(key));
        continue;
      }
      cached = false;
      log("info", label, index);
      std::string layer;
      if (step.kind == builder::StepKind::run) {
        std::string user = step.args.size() > 1 && !step.args[1].empty() ? step.args[1] : context_.user;
        layer = co_await run_step(step.args[0], user, key, index, label);
      } else {
        layer = co_await copy_step(step, key, index);
      }
      layers_.insert(layers_.begin(), layer);
    }
    // Finalize: the workdir exists and the start command gets ready; keyed like a step.
    builder::Step finalize{builder::StepKind::run, {"finalize", plan.start_cmd, plan.ready_cmd, final_user}, false, ""};
    key = builder::layer_key(key, finalize, context_);
    if (plan.force) key = builder::forced_layer_key(key, job_.build_id);
    if (!plan.force && s_.layers_.has(key)) {
      log("info", "CACHED [finalize] start and ready commands [" + key.substr(0, 12) + "]", "finalize");
      layers_.insert(layers_.begin(), s_.layers_.path(key));
    } else {
      log("info", "[finalize] start and ready commands", "finalize");
      // Named arguments throughout: GCC 12 destroys temporaries in a co_await operand twice.
      std::string runtime_user = final_user.empty() ? "user" : final_user;
      std::string layer = co_await finalize_step(plan, runtime_user, key);
      layers_.insert(layers_.begin(), layer);
    }
    Template result;
    result.layers = layers_;
    result.start_cmd = plan.start_cmd;
    result.ready_cmd = plan.ready_cmd;
    result.env = context_.env;
    result.workdir = context_.workdir;
    result.user = final_user;
    result.cpu_count = base->cpu_count;
    result.memory_mb = base->memory_mb;
    result.disk_size_mb = base->disk_size_mb;
    result.envd_version = s_.options_.envd_version;
    co_return result;
  }

  // From a worker thread: the log belongs to the io thread.
  void post_log(const std::string& level, const std::string& message, const std::string& step) {
    net::post(s_.io_, [this, level, message, step] { log(level, message, step); });
  }

  void log(const std::string& level, const std::string& message, const std::string& step) {
    auto it = s_.active_.find(job_.build_id);
    if (it == s_.active_.end()) return;
    it->second.record.logs.push_back(BuildLogEntry{Clock::now(), level, message, step});
  }

 private:
  struct Sandbox {
    std::string id;
    std::string token;
  };

  net::awaitable<Sandbox> start_sandbox(const std::string& changes_dir) {
    CreateRequest request;
    request.template_ref = job_.template_id;
    request.timeout_s = s_.options_.step_timeout_s;
    request.build_layers = layers_;
    request.changes_dir = changes_dir;
    request.metadata = {{"cove.build", job_.build_id}};
    std::string team(kBuilderTeam);
    SandboxView view = co_await s_.sandboxes_.create(team, std::move(request));
    co_return Sandbox{view.record.id, view.envd_access_token};
  }

  net::awaitable<CommandOutcome> command(const Sandbox& sandbox, AgentCommand cmd, const std::string& step,
                                         bool log_output) {
    cmd.access_token = sandbox.token;
    auto lease = co_await s_.sandboxes_.open_port(sandbox.id, s_.options_.agent_port);
    if (!lease) co_return CommandOutcome{false, -1, "", "the build sandbox stopped"};
    LineSplitter out([this, step](std::string line) { log("info", line, step); });
    LineSplitter err([this, step](std::string line) { log("info", line, step); });
    StartStreamDecoder::OutputSink sink = [&](bool is_stderr, std::string_view text) {
      if (log_output) (is_stderr ? err : out).feed(text);
    };
    CommandOutcome outcome = co_await run_agent_command(lease->socket(), std::move(cmd), sink);
    out.flush();
    err.flush();
    co_return outcome;
  }

  net::awaitable<void> prepare_workdir(const Sandbox& sandbox, const std::string& user, const std::string& step) {
    if (context_.workdir.empty()) co_return;
    std::string owner = user.empty() ? "root" : user;
    AgentCommand mkdir{"[ -d " + text::shell_quote(context_.workdir) + " ] || { mkdir -p " + text::shell_quote(context_.workdir) +
                           " && chown " + text::shell_quote(owner) + ": " + text::shell_quote(context_.workdir) + "; }",
                       "root", "/", {}, ""};
    CommandOutcome made = co_await command(sandbox, std::move(mkdir), step, true);
    if (!made.error.empty() || made.exit_code != 0) throw BuildFailure(step, "Cannot create the working directory");
  }

  // A sandbox from the layers so far whose changes become the layer `key`.
  template <class Work>
  net::awaitable<std::string> in_build_sandbox(const std::string& key, const std::string& step, Work work) {
    std::string staging = s_.layers_.make_staging();
    std::optional<Sandbox> sandbox;
    std::exception_ptr failure;
    try {
      sandbox = co_await start_sandbox(staging);
      co_await work(*sandbox);
    } catch (...) {
      failure = std::current_exception();
    }
    if (sandbox) {
      std::string team(kBuilderTeam);
      co_await s_.sandboxes_.kill(team, sandbox->id);  // destroy hands the changes over
    }
    if (failure) {
      s_.layers_.discard(staging);
      try {
        std::rethrow_exception(failure);
      } catch (const BuildFailure&) {
        throw;
      } catch (const std::exception& e) {
        throw BuildFailure(step, std::string("The build sandbox failed: ") + e.what());
      }
    }
    auto publish = [this, staging, key] {
      std::string path = s_.layers_.publish(staging + "/upper", key);
      s_.layers_.discard(staging);
      return path;
    };
    std::string path = co_await run_blocking(s_.pool_, std::move(publish));
    co_return path;
  }

  net::awaitable<std::string> run_step(const std::string& cmd, const std::string& user, const std::string& key,
                                       const std::string& index, const std::string& label) {
    auto work = [this, cmd, user, index, label](const Sandbox& sandbox) -> net::awaitable<void> {
      co_await prepare_workdir(sandbox, context_.user, index);
      // Docker's default working directory is "/" (a fresh Debian has no /home/user yet).
      AgentCommand run{cmd, user, context_.workdir.empty() ? "/" : context_.workdir, context_.env, ""};
      CommandOutcome outcome = co_await command(sandbox, std::move(run), index, true);
      if (!outcome.error.empty()) {
        throw BuildFailure(index, "Step " + index + " (" + label.substr(label.find(']') + 2) + ") failed: " + outcome.error);
      }
      if (outcome.exit_code != 0) {
        throw BuildFailure(index, "Step " + index + " (" + label.substr(label.find(']') + 2) + ") failed: " +
                                      (outcome.status.empty() ? "exit status " + std::to_string(outcome.exit_code)
                                                              : outcome.status));
      }
    };
    std::string path = co_await in_build_sandbox(key, index, work);
    co_return path;
  }

  net::awaitable<std::string> copy_step(const builder::Step& step, const std::string& key, const std::string& index) {
    builder::CopyStep copy;
    copy.archive = s_.archive_path(job_.template_id, step.files_hash);
    copy.src = step.args[0];
    copy.dest = step.args[1];
    copy.workdir = context_.workdir;
    copy.user = step.args.size() > 2 && !step.args[2].empty() ? step.args[2] : context_.user;
    copy.mode = step.args.size() > 3 ? step.args[3] : "";
    auto apply = [this, copy, key] {
      std::string staging = s_.layers_.make_staging();
      try {
        builder::apply_copy(copy, staging, layers_);
      } catch (...) {
        s_.layers_.discard(staging);
        throw;
      }
      return s_.layers_.publish(staging, key);
    };
    try {
      std::string path = co_await run_blocking(s_.pool_, std::move(apply));
      co_return path;
    } catch (const std::exception& e) {
      throw BuildFailure(index, "Step " + index + " (COPY) failed: " + e.what());
    }
  }

  net::awaitable<std::string> finalize_step(const builder::BuildPlan& plan, const std::string& user,
                                            const std::string& key) {
    const std::string step = "finalize";
    auto work = [this, &plan, user, &step](const Sandbox& sandbox) -> net::awaitable<void> {
      co_await prepare_workdir(sandbox, user, step);
      if (plan.start_cmd.empty()) co_return;
      AgentCommand start{plan.start_cmd, user, context_.workdir, context_.env, sandbox.token};
      {
        auto lease = co_await s_.sandboxes_.open_port(sandbox.id, s_.options_.agent_port);
        if (!lease) throw BuildFailure("finalize", "The build sandbox stopped");
        CommandOutcome started = co_await start_agent_command(lease->socket(), std::move(start));
        if (!started.started) throw BuildFailure("finalize", "The start command did not start: " + started.error);
      }
      if (plan.ready_cmd.empty()) co_return;
      auto deadline = std::chrono::steady_clock::now() + s_.options_.ready_limit;
      net::steady_timer timer(co_await net::this_coro::executor);
      for (;;) {
        AgentCommand ready{plan.ready_cmd, user, context_.workdir, context_.env, ""};
        CommandOutcome outcome = co_await command(sandbox, std::move(ready), step, false);
        if (outcome.error.empty() && outcome.exit_code == 0) break;
        if (std::chrono::steady_clock::now() >= deadline) {
          throw BuildFailure("finalize", "The ready command did not succeed within " +
                                             std::to_string(s_.options_.ready_limit.count() / 1000) + " s");
        }
        timer.expires_after(std::chrono::milliseconds(200));
        co_await timer.async_wait(net::use_awaitable);
      }
      log("info", "Template is ready", "finalize");
    };
    std::string path = co_await in_build_sandbox(key, step, work);
    co_return path;
  }

  TemplateService& s_;
  Job& job_;
  std::vector<std::string> layers_;  // uppermost first
  builder::StepContext context_;
};

net::awaitable<void> TemplateService::run(Job job) {
  auto started = std::chrono::steady_clock::now();
  {
    auto it = active_.find(job.build_id);
    if (it != active_.end()) {
      it->second.record.status = BuildStatus::building;
      store_.upsert_build(it->second.record);
    }
  }
  Run build(*this, job);
  std::optional<Template> result;
  std::string reason, reason_step;
  try {
    result = co_await build.execute();
  } catch (const BuildFailure& f) {
    reason = f.what();
    reason_step = f.step;
  } catch (const std::exception& e) {
    reason = "The build failed";
    reason_step = "finalize";
    std::fprintf(stderr, "cove: build %s: %s\n", job.build_id.c_str(), e.what());
  }
  auto it = active_.find(job.build_id);
  if (it != active_.end()) {
    ActiveBuild& active = it->second;
    TemplateBuild& record = active.record;
    auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    char took[64];
    std::snprintf(took, sizeof took, "%.1f s", seconds);
    try {
      auto tpl = store_.template_by_id_or_alias(job.template_id);
      if (result && tpl) {
        if (active.cpu_count) result->cpu_count = *active.cpu_count;
        if (active.memory_mb) result->memory_mb = *active.memory_mb;
        if (active.disk_size_mb) result->disk_size_mb = *active.disk_size_mb;
        record.result = *result;
        record.status = BuildStatus::ready;
        record.logs.push_back({Clock::now(), "info", std::string("Build finished in ") + took, ""});
        Template updated = *result;
        updated.id = tpl->id;
        updated.aliases = tpl->aliases;
        updated.team_id = tpl->team_id;
        updated.is_public = tpl->is_public;
        updated.created_at = tpl->created_at;
        updated.updated_at = Clock::now();
        updated.build_id = job.build_id;
        record.finished_at = Clock::now();
        store_.upsert_build(record);
        store_.upsert_template(updated);
        for (const auto& tag : active.tags) store_.set_tag({tpl->id, tag, job.build_id, Clock::now()});
      } else {
        record.status = BuildStatus::error;
        record.reason = result ? "The template was deleted during its build" : reason;
        record.reason_step = result ? "finalize" : reason_step;
        record.logs.push_back({Clock::now(), "error", record.reason, record.reason_step});
        record.finished_at = Clock::now();
        if (tpl) store_.upsert_build(record);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cove: build %s: cannot record the result: %s\n", job.build_id.c_str(), e.what());
      record.status = BuildStatus::error;
      record.reason = "The build result could not be stored";
    }
    // Finished builds are served from the store; the record stays here until that is certain.
    if (store_.build(job.template_id, job.build_id)) active_.erase(it);
  }
  --running_;
  pump();
}

BuildStatusPage TemplateService::status(const std::string& team_id, const std::string& template_id,
                                        const std::string& build_id, size_t logs_offset) {
  return status_of(owned_template(team_id, template_id), build_id, logs_offset);
}

BuildStatusPage TemplateService::status_of(const Template& tpl, const std::string& build_id, size_t logs_offset) {
  std::optional<TemplateBuild> build;
  if (auto it = active_.find(build_id); it != active_.end() && it->second.record.template_id == tpl.id) {
    build = it->second.record;
  } else {
    build = store_.build(tpl.id, build_id);
  }
  if (!build) throw LifecycleError(LifecycleErrc::not_found, "Build '" + build_id.substr(0, 64) + "' not found");
  BuildStatusPage page;
  page.template_id = tpl.id;
  page.build_id = build_id;
  page.status = build->status;
  page.reason = build->reason;
  page.reason_step = build->reason_step;
  for (size_t i = logs_offset; i < build->logs.size(); ++i) page.entries.push_back(build->logs[i]);
  return page;
}

std::pair<AliasVisibility, std::optional<Template>> TemplateService::alias(const std::string& team_id,
                                                                           const std::string& alias) {
  auto tpl = store_.template_by_id_or_alias(alias);
  if (!tpl) return {AliasVisibility::missing, std::nullopt};
  if (!tpl->is_public && tpl->team_id != team_id) return {AliasVisibility::forbidden, std::nullopt};
  return {AliasVisibility::visible, tpl};
}

std::vector<Template> TemplateService::list(const std::string& team_id) {
  std::vector<Template> out;
  for (auto& tpl : store_.templates()) {
    if (tpl.is_public || tpl.team_id == team_id) out.push_back(std::move(tpl));
  }
  return out;
}

void TemplateService::remove(const std::string& team_id, const std::string& template_id) {
  Template tpl = owned_template(team_id, template_id);
  if (sandboxes_.template_in_use(tpl.id)) {
    throw LifecycleError(LifecycleErrc::conflict, "The template is used by running sandboxes");
  }
  for (const auto& [id, build] : active_) {
    if (build.record.template_id == tpl.id && build.record.status == BuildStatus::building) {
      throw LifecycleError(LifecycleErrc::conflict, "The template is being built");
    }
  }
  store_.delete_template(tpl.id);
  std::error_code ec;
  fs::remove_all(options_.state_dir + "/build-files/" + tpl.id, ec);
  net::co_spawn(io_, collect_garbage(), net::detached);
}

net::awaitable<void> TemplateService::collect_garbage() {
  // Only a private layer store, and only while no build runs: a shared store's other users, and a
  // build's freshly published layers, are not in this database yet.
  if (!options_.layers_dir.empty() || running_ > 0 || collecting_) co_return;
  collecting_ = true;  // builds wait for the sweep (pump)
  std::set<std::string> keep;
  for (auto& layer : store_.layers_in_use()) keep.insert(std::move(layer));
  auto sweep = [this, keep] { return layers_.collect_garbage(keep); };
  size_t removed = 0;
  try {
    removed = co_await run_blocking(pool_, std::move(sweep));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cove: layer cleanup: %s\n", e.what());
  }
  collecting_ = false;
  if (removed > 0) std::fprintf(stderr, "cove: removed %zu template layers no template uses\n", removed);
  pump();
}

std::pair<std::string, std::vector<std::string>> TemplateService::assign_tags(const std::string& team_id,
                                                                              const std::string& target,
                                                                              const std::vector<std::string>& tags) {
  std::string name = target;
  std::string from_tag;
  if (auto colon = target.find(':'); colon != std::string::npos) {
    name = target.substr(0, colon);
    from_tag = target.substr(colon + 1);
  }
  Template tpl = owned_template(team_id, name);
  std::string build_id = tpl.build_id;
  if (!from_tag.empty() && from_tag != "default" && from_tag != "latest") {
    build_id.clear();
    for (const auto& t : store_.tags(tpl.id)) {
      if (t.tag == from_tag) build_id = t.build_id;
    }
  }
  if (build_id.empty()) throw LifecycleError(LifecycleErrc::not_found, "No build of '" + target.substr(0, 128) + "' found");
  if (tags.empty()) throw LifecycleError(LifecycleErrc::bad_request, "No tags given");
  for (const auto& tag : tags) {
    if (!valid_name(tag)) throw LifecycleError(LifecycleErrc::bad_request, "Invalid tag");
  }
  for (const auto& tag : tags) store_.set_tag({tpl.id, tag, build_id, Clock::now()});
  return {build_id, tags};
}

void TemplateService::remove_tags(const std::string& team_id, const std::string& name,
                                  const std::vector<std::string>& tags) {
  Template tpl = owned_template(team_id, name);
  for (const auto& tag : tags) store_.remove_tag(tpl.id, tag);
}

std::vector<TemplateTag> TemplateService::tags(const std::string& team_id, const std::string& template_id) {
  Template tpl = owned_template(team_id, template_id);
  return store_.tags(tpl.id);
}

}  // namespace cove::shim
