#pragma once
// Jupyter wire messages (jupyter-client.readthedocs.io "Messaging in Jupyter", "The Wire
// Protocol"): the multipart frames, their HMAC-SHA256 signature, and message headers.
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cove::interpreter {

// A message that cannot be decoded: no delimiter, bad signature, invalid JSON.
class JupyterMessageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct JupyterMessage {
  std::vector<std::string> identities;  // routing prefix (ROUTER ids, or the iopub topic)
  nlohmann::json header = nlohmann::json::object();
  nlohmann::json parent_header = nlohmann::json::object();
  nlohmann::json metadata = nlohmann::json::object();
  nlohmann::json content = nlohmann::json::object();
  std::vector<std::string> buffers;

  // header.msg_type, or "" when absent.
  std::string msg_type() const;
  // parent_header.msg_id, or "" when absent (e.g. the kernel's first status message).
  std::string parent_msg_id() const;
};

// The frame that separates identities from the message proper.
inline constexpr std::string_view kJupyterDelimiter = "<IDS|MSG>";

// Signs with HMAC-SHA256 keyed by the connection file's key; an empty key means "no signing"
// (the signature frame is then empty), as Jupyter does.
class MessageSigner {
 public:
  explicit MessageSigner(std::string key) : key_(std::move(key)) {}

  // Lowercase hex HMAC over the four serialized JSON parts, in order.
  std::string sign(std::string_view header, std::string_view parent_header, std::string_view metadata,
                   std::string_view content) const;
  // Constant-time comparison with the expected signature.
  bool verify(std::string_view signature, std::string_view header, std::string_view parent_header,
              std::string_view metadata, std::string_view content) const;

  // [identities..., "<IDS|MSG>", signature, header, parent_header, metadata, content, buffers...]
  std::vector<std::string> encode(const JupyterMessage& message) const;
  // Finds the delimiter, checks the signature and parses the JSON parts. Throws
  // JupyterMessageError with a reason.
  JupyterMessage decode(const std::vector<std::string>& frames) const;

 private:
  std::string key_;
};

// Now in UTC as Jupyter writes dates: 2026-11-30T06:53:49.077610Z.
std::string jupyter_now();

// A Jupyter header date re-printed the way Python prints an aware datetime (what the official
// server's pydantic models emit): `Z` becomes `+00:00`, the fraction is kept to microseconds and
// dropped when zero. Returns "" for a string that is not an ISO 8601 date-time.
std::string to_python_isoformat(std::string_view date);

// {msg_id: uuid4, session, username, date: now, msg_type, version: "5.3"}
nlohmann::json make_header(const std::string& msg_type, const std::string& session,
                           const std::string& username);

}  // namespace cove::interpreter
