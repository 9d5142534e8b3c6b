#pragma once
// The outcome of a failed file transfer step: the HTTP status and envd's message for it
// (rest/files.cpp renders it as `{"code":N,"message":...}`).
#include <string>

namespace cove::files {

struct TransferError {
  unsigned status = 0;  // 0: no error
  std::string message;

  explicit operator bool() const { return status != 0; }
  void set(unsigned s, std::string m) {
    if (status == 0) {  // the first failure wins
      status = s;
      message = std::move(m);
    }
  }
};

}  // namespace cove::files
