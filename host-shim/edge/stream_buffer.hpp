#pragma once
// A relay's byte buffer, left uninitialised: its pages become resident only as data is written
// into them, so a thousand idle streams hold address space rather than memory (a zero-filled
// std::vector would touch every page at once).
#include <cstddef>
#include <memory>

namespace cove::shim::edge {

class StreamBuffer {
 public:
  explicit StreamBuffer(size_t size) : data_(new char[size]), size_(size) {}
  char* data() { return data_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_;
};

}  // namespace cove::shim::edge
