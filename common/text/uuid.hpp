#pragma once
// A random (version 4) UUID in its canonical lowercase form, from the kernel's CSPRNG.
#include <string>

namespace cove::text {

std::string random_uuid4();

}  // namespace cove::text
