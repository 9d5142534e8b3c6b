#include "interpreter/repl_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/redirect_error.hpp>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <map>

#include "interpreter/kernel.hpp"
#include "process/spawn.hpp"

namespace cove::interpreter {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string errno_text(int err) { return strerrordesc_np(err) ? strerrordesc_np(err) : "error"; }

// Child side, between fork and exec: async-signal-safe calls only.
[[noreturn]] void child_fail(const char* what, int err) {
  const char* prefix = "cove-agent: ";
  const char* reason = strerrordesc_np(err);
  (void)!::write(2, prefix, strlen(prefix));
  (void)!::write(2, what, strlen(what));
  (void)!::write(2, ": ", 2);
  if (reason) (void)!::write(2, reason, strlen(reason));
  (void)!::write(2, "\n", 1);
  _exit(126);
}

}  // namespace

std::string iso_timestamp_now() {
  auto now = std::chrono::system_clock::now();
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  time_t seconds = static_cast<time_t>(micros / 1000000);
  struct tm tm {};
  gmtime_r(&seconds, &tm);
  char buf[64];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%06lld+00:00", static_cast<long long>(micros % 1000000));
  return buf;
}

size_t complete_utf8_prefix(const std::string& bytes) {
  // Look back at most 3 bytes for the lead byte of a sequence that is cut off.
  size_t size = bytes.size();
  for (size_t back = 1; back <= 3 && back <= size; ++back) {
    unsigned char c = static_cast<unsigned char>(bytes[size - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? size - back : size;
  }
  return size;  // ASCII end, or invalid bytes the caller passes on as they are
}

ReplProcess::ReplProcess(net::any_io_executor executor, pid_t pid, Handlers handlers)
    : executor_(executor), pid_(pid), handlers_(std::move(handlers)), exit_event_(executor) {}

ReplProcess::~ReplProcess() {
  if (!exited_) ::kill(-pid_, SIGKILL);
}

std::shared_ptr<ReplProcess> ReplProcess::spawn(net::any_io_executor executor,
                                                process::Registry& registry,
                                                const ReplProcessSpec& spec, Handlers handlers) {
  if (spec.argv.empty()) throw KernelError("no program to start");
  struct stat st {};
  if (::stat(spec.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw KernelError("working directory " + spec.cwd + " does not exist");
  }
  std::vector<std::string> candidates = process::executable_candidates(spec.argv[0], spec.env);
  auto found = std::find_if(candidates.begin(), candidates.end(),
                            [](const std::string& c) { return ::access(c.c_str(), X_OK) == 0; });
  if (found == candidates.end()) throw KernelError(spec.argv[0] + " is not installed in this sandbox");
  std::string program = *found;

  // Parent ends get O_NONBLOCK; every descriptor is close-on-exec until dup2 puts it in place.
  int out[2] = {-1, -1}, err[2] = {-1, -1}, req[2] = {-1, -1}, rep[2] = {-1, -1};
  int devnull = -1;
  auto cleanup = [&] {
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &req[0], &req[1], &rep[0], &rep[1], &devnull}) {
      close_fd(*fd);
    }
  };
  if (pipe2(out, O_CLOEXEC) != 0 || (!spec.merge_stderr && pipe2(err, O_CLOEXEC) != 0) ||
      pipe2(req, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0 ||
      (devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
    int e = errno;
    cleanup();
    throw KernelError("cannot create pipes: " + errno_text(e));
  }

  // Child fd → parent-side descriptor to put there.
  std::map<int, int> layout;
  layout[0] = spec.requests_on_stdin ? req[0] : devnull;
  layout[1] = out[1];
  layout[2] = spec.merge_stderr ? out[1] : err[1];
  if (!spec.requests_on_stdin) layout[spec.requests_fd] = req[0];
  layout[spec.replies_fd] = rep[1];
  int highest = layout.rbegin()->first;

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(spec.argv[0].c_str()));
  for (size_t i = 1; i < spec.argv.size(); ++i) argv.push_back(const_cast<char*>(spec.argv[i].c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<std::pair<int, int>> moves(layout.begin(), layout.end());

  // No signal handler of the agent may run in the child before exec.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    setsid();
    // Lift every source above the targets first, so no dup2 overwrites a source still needed.
    for (auto& [target, source] : moves) {
      int lifted = fcntl(source, F_DUPFD_CLOEXEC, highest + 1);
      if (lifted < 0) child_fail("fcntl", errno);
      source = lifted;
    }
    for (auto& [target, source] : moves) {
      if (dup2(source, target) < 0) child_fail("dup2", errno);
    }
    // Close everything else the agent had open (not all of it is close-on-exec).
    int next = 0;
    for (auto& [target, source] : moves) {
      if (target > next) syscall(SYS_close_range, static_cast<unsigned>(next), static_cast<unsigned>(target - 1), 0U);
      next = target + 1;
    }
    syscall(SYS_close_range, static_cast<unsigned>(next), ~0U, 0U);
    if (chdir(spec.cwd.c_str()) != 0) child_fail("chdir", errno);
    execve(program.c_str(), argv.data(), envp.data());
    child_fail("exec", errno);
  }
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) {
    cleanup();
    throw KernelError("cannot start " + spec.argv[0] + ": " + errno_text(fork_errno));
  }

  auto self = std::shared_ptr<ReplProcess>(new ReplProcess(executor, pid, std::move(handlers)));
  std::weak_ptr<ReplProcess> weak = self;
  registry.watch_exit(pid, [weak](int status) {
    if (auto p = weak.lock()) p->on_exit(status);
  });

  for (int fd : {out[0], err[0], rep[0], req[1]}) {
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  self->readers_[ReplProcess::out].emplace(executor, out[0]);
  out[0] = -1;
  if (err[0] >= 0) {
    self->readers_[ReplProcess::err].emplace(executor, err[0]);
    err[0] = -1;
  }
  self->readers_[ReplProcess::replies].emplace(executor, rep[0]);
  rep[0] = -1;
  self->requests_.emplace(executor, req[1]);
  req[1] = -1;
  cleanup();  // the child's ends
  for (Channel c : {ReplProcess::out, ReplProcess::err, ReplProcess::replies}) {
    if (self->readers_[c]) self->watch(c);
  }
  return self;
}

void ReplProcess::watch(Channel channel) {
  readers_[channel]->async_wait(
      net::posix::descriptor_base::wait_read,
      [self = shared_from_this(), channel](const boost::system::error_code& ec) {
        if (ec || !self->readers_[channel]) return;
        if (self->read_channel(channel, false)) {
          self->watch(channel);
        } else if (self->readers_[channel]) {
          self->readers_[channel]->close();
          self->readers_[channel].reset();
        }
      });
}

bool ReplProcess::read_channel(Channel channel, bool final) {
  if (!readers_[channel]) return false;
  int fd = readers_[channel]->native_handle();
  char buf[65536];
  bool open = true;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      pending_[channel].append(buf, static_cast<size_t>(n));
      if (channel != replies) deliver_output(channel == err, pending_[channel], false);
      continue;  // until EAGAIN: everything written so far is read now
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) open = false;
    break;
  }
  if (channel != replies) {
    if (final || !open) deliver_output(channel == err, pending_[channel], true);
    return open;
  }
  // Replies: one handler call per complete line; a handler may detach us.
  size_t start = 0;
  for (size_t nl; (nl = pending_[channel].find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = pending_[channel].substr(start, nl - start);
    if (handlers_.reply) handlers_.reply(std::move(line));
  }
  pending_[channel].erase(0, start);
  return open;
}

void ReplProcess::deliver_output(bool is_stderr, std::string& pending, bool final) {
  size_t cut = final ? pending.size() : complete_utf8_prefix(pending);
  if (cut == 0) return;
  std::string text = pending.substr(0, cut);
  pending.erase(0, cut);
  if (handlers_.output) handlers_.output(is_stderr, std::move(text));
}

void ReplProcess::drain_output(bool final) {
  for (Channel c : {out, err}) read_channel(c, final);
}

net::awaitable<bool> ReplProcess::send(std::string bytes) {
  if (!requests_ || exited_) co_return false;
  auto self = shared_from_this();  // alive across the write
  boost::system::error_code ec;
  co_await net::async_write(*requests_, net::buffer(bytes), net::redirect_error(net::use_awaitable, ec));
  co_return !ec;
}

void ReplProcess::close_requests() {
  if (requests_) {
    boost::system::error_code ignored;
    requests_->close(ignored);
    requests_.reset();
  }
}

void ReplProcess::signal_group(int sig) {
  // Also after the REPL exited: what user code started may still be in its group.
  ::kill(-pid_, sig);
}

void ReplProcess::detach() { handlers_ = {}; }

void ReplProcess::on_exit(int wait_status) {
  exited_ = true;
  // What the child wrote before it died comes first, then the news of its death.
  read_channel(replies, true);
  drain_output(true);
  close_requests();
  exit_event_.notify_all();
  if (auto exited = handlers_.exited) exited(wait_status);
}

net::awaitable<bool> ReplProcess::wait_exit(std::chrono::steady_clock::time_point deadline) {
  auto self = shared_from_this();
  while (!exited_) {
    if (!co_await exit_event_.wait_until(deadline)) break;
  }
  co_return exited_;
}

}  // namespace cove::interpreter
