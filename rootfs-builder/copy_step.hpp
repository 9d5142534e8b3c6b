#pragma once
// A COPY step: the members of an uploaded build context that match the step's source, placed at
// its destination in a new layer, owned by the step's user, with its mode. Docker's rules: a file
// source goes to `dest` (or `dest/<name>` when dest ends in '/'), a directory's contents go into
// `dest`, glob sources match top-level names like a shell.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cove::builder {

struct CopyStep {
  std::string archive;  // the uploaded context tar (gzip or plain)
  std::string src;
  std::string dest;     // absolute, or relative to `workdir`
  std::string workdir;  // "" = "/"
  std::string user;     // name or uid[:gid] from the layers' /etc/passwd; "" = root
  std::string mode;     // octal ("0755"), "" = as archived
};

struct CopyResult {
  size_t entries = 0;  // members placed
};

// `layer_dir` is the new (empty) layer; `lowers` are the layers below it, uppermost first: they
// give the user's ids and the ownership and mode of destination directories that exist already
// (so a COPY into /home/user keeps that directory as it is). Throws std::runtime_error (TarError
// for a bad archive) with a client-safe message; nothing matched is an error, as in Docker.
CopyResult apply_copy(const CopyStep& step, const std::string& layer_dir, const std::vector<std::string>& lowers);

struct UserIds {
  uint32_t uid = 0, gid = 0;
};
// A user name or "uid[:gid]" resolved with the uppermost layer's etc/passwd; nullopt if unknown.
std::optional<UserIds> resolve_user(const std::string& user, const std::vector<std::string>& layers);

}  // namespace cove::builder
