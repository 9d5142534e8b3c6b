#pragma once
// Time and ids come through small interfaces so the lifecycle is tested without sleeping.
#include <string>

#include "store/records.hpp"

namespace cove::shim {

class WallClock {
 public:
  virtual ~WallClock() = default;
  virtual TimePoint now() const = 0;
};

class SystemWallClock final : public WallClock {
 public:
  TimePoint now() const override { return Clock::now(); }
};

class IdSource {
 public:
  virtual ~IdSource() = default;
  virtual std::string sandbox_id() = 0;  // 20 chars of [a-z0-9], E2B's shape
};

// From the kernel's CSPRNG.
class RandomIdSource final : public IdSource {
 public:
  std::string sandbox_id() override;
};

}  // namespace cove::shim
