#pragma once
// POST /files/compose without HTTP (envd.md §3): concatenate source files into a temporary
// sibling of the destination (copy_file_range), rename it over the destination, delete the
// sources. The copy advances in bounded steps so the caller can yield between them.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "files/fd.hpp"
#include "files/transfer_error.hpp"
#include "system/users.hpp"

namespace cove::files {

struct ComposeRequest {
  std::vector<std::string> source_paths;
  std::string destination;
  std::optional<std::string> username;
};

// The JSON body ({"source_paths":[...],"destination":"...","username":"..."}; names matched
// case-insensitively, unknown fields ignored, trailing data ignored, as Go's json.Decoder).
// On failure `error` is the 400 message ("invalid request body: ...").
bool parse_compose_request(std::string_view body, ComposeRequest& out, std::string& error);

// The checks that need no user: 400 "source_paths must not be empty" / "destination is required".
TransferError check_compose_request(const ComposeRequest& request);

class ComposeJob {
 public:
  // Resolves and checks every path (400/404), ensures the destination's parent (500) and creates
  // "<dest>.e2b-compose.<uuid>.tmp" owned by the user (507/500).
  static std::unique_ptr<ComposeJob> start(const ComposeRequest& request, const system::User& user,
                                           const std::optional<std::string>& default_workdir, TransferError& error);
  ~ComposeJob();
  ComposeJob(const ComposeJob&) = delete;
  ComposeJob& operator=(const ComposeJob&) = delete;

  // Copies at most `budget` bytes. Returns false on failure (`error` set, temp file removed);
  // `done` becomes true once every source is copied.
  bool step(std::uint64_t budget, bool& done, TransferError& error);
  // Renames into place and deletes the sources. On success returns the response body:
  // {"name":..,"path":..,"type":"file"} plus a newline (Go's json.Encoder).
  bool finish(std::string& body, TransferError& error);

  const std::string& temp_path() const { return temp_; }

 private:
  ComposeJob() = default;
  bool copy_fallback(std::uint64_t budget, std::uint64_t& copied, TransferError& error);
  void cleanup();

  std::vector<std::string> sources_;  // resolved
  std::string destination_;
  std::string temp_;
  Fd out_;
  Fd in_;
  size_t index_ = 0;  // source being copied
  bool finished_ = false;
};

}  // namespace cove::files
