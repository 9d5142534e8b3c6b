#pragma once
// A template build as the E2B build API describes it (`TemplateBuildStartV2`, e2b-sdk.md §2.3):
// where it starts from, its steps, and its start and ready commands. Parsing validates
// everything a build relies on, so the pipeline never meets a malformed step.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cove::builder {

struct BuildPlanError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

enum class StepKind { run, copy, env, workdir, user };

struct Step {
  StepKind kind = StepKind::run;
  std::vector<std::string> args;  // as sent: RUN [cmd, user?], COPY [src, dest, user?, mode?], ENV [k, v, …]
  bool force = false;             // rebuild this step (and so everything after it)
  std::string files_hash;         // COPY: the uploaded context's key
};

struct RegistryCredentials {
  std::string username;
  std::string password;
};

struct BuildPlan {
  std::string from_template;  // exactly one of these three is set (default: from_template "base")
  std::string from_image;
  std::string from_debian;    // a Debian suite (built-in definitions only, not the build API)
  std::optional<RegistryCredentials> registry;
  bool force = false;         // skipCache: every step rebuilds
  std::string start_cmd;
  std::string ready_cmd;
  std::vector<Step> steps;
};

// Throws BuildPlanError with a message fit for the client (it never echoes long values).
BuildPlan parse_build_plan(std::string_view json);

// A built-in template's definition (templates/<name>/template.json): the build API's request
// plus the template's name and resources, and `fromDebian` as a source.
struct TemplateDefinition {
  std::string name;
  int cpu_count = 2;
  int memory_mb = 512;
  int disk_size_mb = 2048;
  BuildPlan plan;
};
TemplateDefinition parse_template_definition(std::string_view json);

// "RUN apt-get install -y curl" — how logs and errors name a step.
std::string describe(const Step& step);

// The build context a step runs in; ENV, WORKDIR and USER steps change it.
struct StepContext {
  std::vector<std::pair<std::string, std::string>> env;
  std::string user = "root";
  std::string workdir;  // "" = the user's home
};
void apply_context_step(const Step& step, StepContext& context);
bool makes_layer(const Step& step);  // RUN and COPY

// Content keys: a layer is identified by everything that decides its bytes.
std::string base_layer_key(const std::vector<std::string>& base_layers);
std::string layer_key(const std::string& parent_key, const Step& step, const StepContext& context);
// A forced step's layer: unique to the build, so it never replaces a layer others use, and the
// steps after it miss the cache too.
std::string forced_layer_key(const std::string& key, const std::string& build_id);

bool valid_files_hash(std::string_view hash);  // 64 lowercase hex digits

}  // namespace cove::builder
