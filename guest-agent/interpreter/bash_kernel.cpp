#include "interpreter/bash_kernel.hpp"

#include "text/shell_quote.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

namespace cove::interpreter {
namespace {

// High enough that scripts using fds 3-9 or bash's own allocations from 10 up never meet it.
constexpr int kReplyFd = 250;


}  // namespace

BashKernel::BashKernel(KernelLaunch launch, KernelServices services)
    : ReplKernel(std::move(launch), std::move(services)) {}

BashKernel::~BashKernel() { remove_cell_dir(); }

void BashKernel::remove_cell_dir() {
  if (cell_dir_.empty()) return;
  std::remove((cell_dir_ + "/cell.sh").c_str());
  ::rmdir(cell_dir_.c_str());
  cell_dir_.clear();
}

ReplProcessSpec BashKernel::prepare() {
  remove_cell_dir();
  std::string pattern = launch_.runtime_dir + "/bash-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) {
    throw KernelError("cannot create a directory in " + launch_.runtime_dir + ": " + strerror(errno));
  }
  cell_dir_ = buf.data();
  ReplProcessSpec spec;
  // Interactive (-i) for Ctrl-C semantics; --noediting: no readline echoing the commands.
  spec.argv = {"bash", "--noprofile", "--norc", "--noediting", "-i"};
  spec.env = launch_.env;
  spec.cwd = launch_.cwd;
  spec.requests_on_stdin = true;
  spec.replies_fd = kReplyFd;
  spec.merge_stderr = true;
  return spec;
}

std::string BashKernel::setup_request() {
  // No prompts in the output and no history file; __cove_status hands the previous cell's
  // status on as `$?`. The first PROMPT_COMMAND run (cell id 0) says the shell is ready.
  std::string fd = std::to_string(kReplyFd);
  return "PS1=''; PS2=''; PS0=''; unset HISTFILE; set +o history; "
         "__cove_status() { return \"$1\"; }; "
         "PROMPT_COMMAND='__cove_prev=$?; printf \"%s %s\\n\" \"$__cove_prev\" \"${__cove_cell:-0}\" >&" +
         fd + "'; readonly PROMPT_COMMAND\n";
}

std::string BashKernel::cell_request(int64_t id, const std::string& code, bool /*silent*/) {
  std::string path = cell_dir_ + "/cell.sh";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << code;
    if (!code.empty() && code.back() != '\n') out << '\n';
    if (!out) throw KernelError("cannot write " + path);
  }
  return "__cove_cell=" + std::to_string(id) + "; __cove_status \"${__cove_prev:-0}\"; source " +
         text::shell_quote(path) + " </dev/null " + std::to_string(kReplyFd) + ">&-\n";
}

ReplKernel::Reply BashKernel::parse_reply(const std::string& line) {
  Reply reply;
  int status = 0;
  long long id = 0;
  char extra = 0;
  if (std::sscanf(line.c_str(), "%d %lld %c", &status, &id, &extra) != 2) return reply;
  if (id == 0) {
    reply.kind = Reply::Kind::ready;
  } else {
    reply.kind = Reply::Kind::done;
    reply.id = id;
    reply.status = status;
  }
  return reply;
}

}  // namespace cove::interpreter
