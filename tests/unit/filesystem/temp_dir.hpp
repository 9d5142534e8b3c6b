#pragma once
// A scratch directory under $TMPDIR (or /tmp) for the filesystem tests, removed afterwards.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "filesystem/operations.hpp"

namespace cove::test {

class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/cove-fs-test.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() { (void)cove::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

  void write(const std::string& rel, const std::string& content) const {
    std::ofstream(*this / rel) << content;
  }
  void mkdir(const std::string& rel, mode_t mode = 0755) const {
    if (::mkdir((*this / rel).c_str(), mode) != 0) throw std::runtime_error("mkdir " + rel);
  }
  void symlink(const std::string& target, const std::string& rel) const {
    if (::symlink(target.c_str(), (*this / rel).c_str()) != 0) throw std::runtime_error("symlink " + rel);
  }

 private:
  std::string path_;
};

}  // namespace cove::test
