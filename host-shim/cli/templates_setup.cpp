#include "cli/templates_setup.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cove::shim {
namespace fs = std::filesystem;
namespace {

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the agent binary");
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::array<char, 1 << 16> buf;
  while (in.read(buf.data(), buf.size()) || in.gcount() > 0) {
    EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, digest, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  char b[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(b, sizeof b, "%02x", digest[i]);
    hex += b;
  }
  return hex;
}

// `cove-agent -version`, without a shell.
std::string agent_version(const std::string& agent) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  std::string flag = "-version";
  char* argv[] = {const_cast<char*>(agent.c_str()), flag.data(), nullptr};
  char* envp[] = {nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, agent.c_str(), &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  if (rc == 0) {
    char buf[256];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    int status = 0;
    waitpid(pid, &status, 0);
  }
  close(fds[0]);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.pop_back();
  if (out.empty()) throw std::runtime_error("the agent binary did not report a version");
  return out;
}

}  // namespace

PreparedTemplates prepare_templates(const Config& config, Store& store) {
  // Default: the agent built and installed beside this binary.
  std::string agent_path = config.agent_path;
  if (agent_path.empty()) agent_path = (fs::read_symlink("/proc/self/exe").parent_path() / "cove-agent").string();
  if (!fs::is_regular_file(agent_path)) throw std::runtime_error("the cove-agent binary was not found");
  PreparedTemplates prepared;
  prepared.envd_version = agent_version(agent_path);

  fs::path layer = fs::path(config.state_dir) / "layers" / ("agent-" + sha256_file(agent_path).substr(0, 16));
  fs::path binary = layer / "usr/local/bin/cove-agent";
  if (!fs::exists(binary)) {
    fs::path staging = layer.string() + ".tmp";
    fs::remove_all(staging);
    fs::create_directories(staging / "usr/local/bin");
    for (auto dir : {staging, staging / "usr", staging / "usr/local", staging / "usr/local/bin"}) {
      ::chmod(dir.c_str(), 0755);
    }
    fs::copy_file(agent_path, staging / "usr/local/bin/cove-agent");
    ::chmod((staging / "usr/local/bin/cove-agent").c_str(), 0755);
    fs::rename(staging, layer);
  }
  prepared.agent_layer = layer.string();

  auto now = Clock::now();
  for (auto& tc : config.templates) {
    if (!fs::is_directory(tc.rootfs)) {
      throw std::runtime_error("template '" + tc.id + "': rootfs is not a directory");
    }
    Template tpl;
    auto existing = store.template_by_id_or_alias(tc.id);
    tpl.id = tc.id;
    tpl.aliases = tc.aliases;
    if (tpl.aliases.empty()) tpl.aliases.push_back(tc.id);
    tpl.cpu_count = tc.cpu_count;
    tpl.memory_mb = tc.memory_mb;
    tpl.disk_size_mb = tc.disk_size_mb;
    tpl.envd_version = prepared.envd_version;
    tpl.layers = {tc.rootfs};
    tpl.is_public = true;
    tpl.created_at = existing ? existing->created_at : now;
    tpl.updated_at = now;
    tpl.build_id = existing && existing->layers == tpl.layers ? existing->build_id : std::string();
    if (tpl.build_id.empty()) {
      // A build id that changes when the template's content source changes.
      std::ostringstream id;
      id << std::hex << std::hash<std::string>{}(tc.rootfs + prepared.envd_version);
      tpl.build_id = id.str();
    }
    store.upsert_template(tpl);
    prepared.templates.push_back(tpl);
  }
  return prepared;
}

}  // namespace cove::shim
