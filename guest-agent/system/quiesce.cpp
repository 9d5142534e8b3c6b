#include "system/quiesce.hpp"

namespace cove::system {

net::awaitable<std::string> Quiesce::freeze(int request_fd) {
  // Set first: a resume arriving while a part is still letting go must take back what was let go.
  prepared_ = true;
  const unsigned long resumes = resumes_;
  std::string problems;
  for (auto* part : parts_) {
    std::string problem = co_await part->let_go(request_fd);
    if (resumes_ != resumes) co_return "interrupted by a resume";
    if (problem.empty()) continue;
    if (!problems.empty()) problems += "; ";
    problems += problem;
  }
  co_return problems;
}

void Quiesce::resume() {
  if (!prepared_) return;
  prepared_ = false;
  ++resumes_;
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) (*it)->take_back();
}

}  // namespace cove::system
