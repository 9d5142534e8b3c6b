#include "rootfs-builder/build_plan.hpp"

#include <openssl/evp.h>

#include <nlohmann/json.hpp>

namespace cove::builder {
namespace {

using nlohmann::json;

constexpr size_t kMaxSteps = 1000;
constexpr size_t kMaxArg = 64 * 1024;

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string optional_string(const json& j, const char* key, std::string_view where) {
  if (!j.contains(key) || j[key].is_null()) return {};
  if (!j[key].is_string()) throw BuildPlanError(std::string(where) + ": '" + key + "' must be a string");
  auto value = j[key].get<std::string>();
  if (value.size() > kMaxArg) throw BuildPlanError(std::string(where) + ": '" + key + "' is too long");
  return value;
}

bool optional_bool(const json& j, const char* key, std::string_view where) {
  if (!j.contains(key) || j[key].is_null()) return false;
  if (!j[key].is_boolean()) throw BuildPlanError(std::string(where) + ": '" + key + "' must be a boolean");
  return j[key].get<bool>();
}

bool valid_mode(std::string_view mode) {
  if (mode.empty() || mode.size() > 4) return false;
  for (char c : mode) {
    if (c < '0' || c > '7') return false;
  }
  return true;
}

bool valid_env_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c == '=' || c == '\0') return false;
  }
  return true;
}

Step parse_step(const json& j, size_t index) {
  std::string where = "step " + std::to_string(index + 1);
  if (!j.is_object()) throw BuildPlanError(where + " must be an object");
  std::string type = optional_string(j, "type", where);
  Step step;
  if (type == "RUN") {
    step.kind = StepKind::run;
  } else if (type == "COPY" || type == "ADD") {
    step.kind = StepKind::copy;
  } else if (type == "ENV" || type == "ARG") {
    step.kind = StepKind::env;
  } else if (type == "WORKDIR") {
    step.kind = StepKind::workdir;
  } else if (type == "USER") {
    step.kind = StepKind::user;
  } else {
    throw BuildPlanError(where + ": unknown step type" + (type.size() <= 16 ? " '" + type + "'" : std::string()));
  }
  if (!j.contains("args") || !j["args"].is_array()) throw BuildPlanError(where + ": 'args' must be an array");
  for (const auto& a : j["args"]) {
    if (!a.is_string()) throw BuildPlanError(where + ": every argument must be a string");
    if (a.get_ref<const std::string&>().size() > kMaxArg) throw BuildPlanError(where + ": an argument is too long");
    step.args.push_back(a.get<std::string>());
  }
  step.force = optional_bool(j, "force", where);
  step.files_hash = optional_string(j, "filesHash", where);
  auto& a = step.args;
  switch (step.kind) {
    case StepKind::run:
      if (a.empty() || a.size() > 2 || a[0].empty()) throw BuildPlanError(where + ": RUN takes a command and an optional user");
      break;
    case StepKind::copy:
      if (a.size() < 2 || a.size() > 4 || a[0].empty() || a[1].empty()) {
        throw BuildPlanError(where + ": COPY takes a source, a destination, an optional user and mode");
      }
      if (a.size() == 4 && !a[3].empty() && !valid_mode(a[3])) throw BuildPlanError(where + ": COPY mode must be octal like 0755");
      if (!valid_files_hash(step.files_hash)) throw BuildPlanError(where + ": COPY needs the filesHash of its uploaded files");
      break;
    case StepKind::env:
      if (type == "ARG" && a.size() == 1) a.push_back("");  // ARG NAME: an empty default
      if (a.empty() || a.size() % 2 != 0) throw BuildPlanError(where + ": " + type + " takes name and value pairs");
      for (size_t i = 0; i < a.size(); i += 2) {
        if (!valid_env_name(a[i])) throw BuildPlanError(where + ": invalid variable name");
      }
      break;
    case StepKind::workdir:
      if (a.size() != 1 || a[0].empty()) throw BuildPlanError(where + ": WORKDIR takes one path");
      break;
    case StepKind::user:
      if (a.size() != 1 || a[0].empty()) throw BuildPlanError(where + ": USER takes one user name");
      break;
  }
  return step;
}

std::string join_path(const std::string& base, const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  std::string dir = base.empty() ? "/" : base;
  if (dir.back() != '/') dir += '/';
  return dir + path;
}

}  // namespace

bool valid_files_hash(std::string_view hash) {
  if (hash.size() != 64) return false;
  for (char c : hash) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

namespace {

json parse_object(std::string_view text, const char* what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception&) {
    throw BuildPlanError(std::string(what) + " is not valid JSON");
  }
  if (!j.is_object()) throw BuildPlanError(std::string(what) + " must be a JSON object");
  return j;
}

BuildPlan plan_from(const json& j, bool allow_debian) {
  BuildPlan plan;
  plan.from_template = optional_string(j, "fromTemplate", "build");
  plan.from_image = optional_string(j, "fromImage", "build");
  if (allow_debian) plan.from_debian = optional_string(j, "fromDebian", "build");
  int sources = !plan.from_template.empty() + !plan.from_image.empty() + !plan.from_debian.empty();
  if (sources > 1) throw BuildPlanError("give one of fromTemplate, fromImage" + std::string(allow_debian ? " or fromDebian" : ""));
  if (sources == 0) plan.from_template = "base";
  if (j.contains("fromImageRegistry") && !j["fromImageRegistry"].is_null()) {
    const auto& r = j["fromImageRegistry"];
    if (!r.is_object()) throw BuildPlanError("fromImageRegistry must be an object");
    std::string type = optional_string(r, "type", "fromImageRegistry");
    if (type != "registry") throw BuildPlanError("only fromImageRegistry type 'registry' is supported");
    plan.registry = RegistryCredentials{optional_string(r, "username", "fromImageRegistry"),
                                        optional_string(r, "password", "fromImageRegistry")};
  }
  plan.force = optional_bool(j, "force", "build");
  plan.start_cmd = optional_string(j, "startCmd", "build");
  plan.ready_cmd = optional_string(j, "readyCmd", "build");
  if (j.contains("steps") && !j["steps"].is_null()) {
    if (!j["steps"].is_array()) throw BuildPlanError("'steps' must be an array");
    if (j["steps"].size() > kMaxSteps) throw BuildPlanError("a build has at most 1000 steps");
    for (size_t i = 0; i < j["steps"].size(); ++i) plan.steps.push_back(parse_step(j["steps"][i], i));
  }
  return plan;
}

int resource(const json& j, const char* key, int fallback, int low, int high) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_number_integer()) throw BuildPlanError(std::string("'") + key + "' must be an integer");
  auto v = j[key].get<int64_t>();
  if (v < low || v > high) throw BuildPlanError(std::string("'") + key + "' is out of range");
  return static_cast<int>(v);
}

}  // namespace

BuildPlan parse_build_plan(std::string_view text) { return plan_from(parse_object(text, "the build request"), false); }

TemplateDefinition parse_template_definition(std::string_view text) {
  json j = parse_object(text, "the template definition");
  TemplateDefinition def;
  def.name = optional_string(j, "name", "definition");
  if (def.name.empty()) throw BuildPlanError("the template definition needs a 'name'");
  def.cpu_count = resource(j, "cpuCount", def.cpu_count, 1, 64);
  def.memory_mb = resource(j, "memoryMB", def.memory_mb, 128, 262144);
  def.disk_size_mb = resource(j, "diskSizeMB", def.disk_size_mb, 256, 1048576);
  def.plan = plan_from(j, true);
  return def;
}

std::string describe(const Step& step) {
  std::string out;
  switch (step.kind) {
    case StepKind::run: out = "RUN " + step.args[0]; break;
    case StepKind::copy: out = "COPY " + step.args[0] + " " + step.args[1]; break;
    case StepKind::env: {
      out = "ENV";
      for (size_t i = 0; i + 1 < step.args.size(); i += 2) out += " " + step.args[i] + "=" + step.args[i + 1];
      break;
    }
    case StepKind::workdir: out = "WORKDIR " + step.args[0]; break;
    case StepKind::user: out = "USER " + step.args[0]; break;
  }
  if (out.size() > 200) out = out.substr(0, 197) + "...";
  return out;
}

void apply_context_step(const Step& step, StepContext& context) {
  switch (step.kind) {
    case StepKind::env:
      for (size_t i = 0; i + 1 < step.args.size(); i += 2) {
        bool replaced = false;
        for (auto& [k, v] : context.env) {
          if (k == step.args[i]) {
            v = step.args[i + 1];
            replaced = true;
          }
        }
        if (!replaced) context.env.emplace_back(step.args[i], step.args[i + 1]);
      }
      break;
    case StepKind::workdir: context.workdir = join_path(context.workdir, step.args[0]); break;
    case StepKind::user: context.user = step.args[0]; break;
    default: break;
  }
}

bool makes_layer(const Step& step) { return step.kind == StepKind::run || step.kind == StepKind::copy; }

std::string base_layer_key(const std::vector<std::string>& base_layers) {
  json j = {{"base", base_layers}};
  return sha256_hex(j.dump());
}

std::string layer_key(const std::string& parent_key, const Step& step, const StepContext& context) {
  // JSON, not concatenation: no two different inputs can serialise alike.
  json j = {{"parent", parent_key},
            {"kind", static_cast<int>(step.kind)},
            {"args", step.args},
            {"files", step.files_hash},
            {"env", context.env},
            {"user", context.user},
            {"workdir", context.workdir}};
  return sha256_hex(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string forced_layer_key(const std::string& key, const std::string& build_id) {
  json j = {{"forced", key}, {"build", build_id}};
  return sha256_hex(j.dump());
}

}  // namespace cove::builder
