#pragma once
// A POSIX shell word that stands for `s` exactly: single quotes, each ' as '\''.
#include <string>

namespace cove::text {

std::string shell_quote(const std::string& s);

}  // namespace cove::text
