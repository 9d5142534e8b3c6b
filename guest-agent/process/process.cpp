#include "process/process.hpp"

#include <sys/ioctl.h>
#include <signal.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace cove::process {
namespace {
constexpr size_t kPipeChunk = 32 * 1024;  // one event per read, as envd
constexpr size_t kPtyChunk = 16 * 1024;

std::unique_ptr<net::posix::stream_descriptor> adopt(net::any_io_executor ex, int fd) {
  if (fd < 0) return nullptr;
  auto d = std::make_unique<net::posix::stream_descriptor>(ex, fd);
  d->non_blocking(true);
  return d;
}
}  // namespace

Process::Process(net::any_io_executor executor, pid_t pid, const SpawnedChild& child,
                 RequestedConfig config, std::optional<std::string> tag,
                 std::shared_ptr<OutputHub> hub)
    : executor_(executor), pid_(pid), config_(std::move(config)), tag_(std::move(tag)),
      hub_(std::move(hub)), deadline_(executor), write_turn_(executor) {
  stdin_ = adopt(executor, child.stdin_fd);
  stdout_ = adopt(executor, child.stdout_fd);
  stderr_ = adopt(executor, child.stderr_fd);
  pty_ = adopt(executor, child.pty_fd);
}

Process::~Process() = default;

void Process::start_readers() {
  auto self = shared_from_this();
  auto spawn_reader = [&](net::posix::stream_descriptor* fd, OutputStream stream, size_t chunk) {
    if (!fd) return;
    ++open_readers_;
    net::co_spawn(executor_, [self, fd, stream, chunk]() { return self->read_output(*fd, stream, chunk); },
                  net::detached);
  };
  spawn_reader(pty_.get(), OutputStream::pty, kPtyChunk);
  spawn_reader(stdout_.get(), OutputStream::stdout_stream, kPipeChunk);
  spawn_reader(stderr_.get(), OutputStream::stderr_stream, kPipeChunk);
}

net::awaitable<void> Process::read_output(net::posix::stream_descriptor& fd, OutputStream stream,
                                          size_t chunk) {
  auto self = shared_from_this();  // keep alive while reading
  std::string buf;
  for (;;) {
    while (hub_->congested() && !skip_remaining_output_) co_await hub_->drained().wait();
    if (skip_remaining_output_) break;
    buf.resize(chunk);
    boost::system::error_code ec;
    size_t n = co_await fd.async_read_some(net::buffer(buf), net::redirect_error(net::use_awaitable, ec));
    if (ec || n == 0) break;  // EOF, or EIO once a pty's last slave fd closes
    buf.resize(n);
    hub_->publish_data(stream, std::move(buf));
    buf = std::string();
  }
  --open_readers_;
  maybe_finish();
}

void Process::kill_at(std::chrono::steady_clock::time_point deadline) {
  deadline_.expires_at(deadline);
  std::weak_ptr<Process> weak = shared_from_this();
  deadline_.async_wait([weak](boost::system::error_code ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->signal(SIGKILL);
  });
}

bool Process::signal(int signo) {
  if (hub_->ended()) return true;  // finished; nothing left to signal
  // The child leads its own process group (setsid), so this reaches everything it started,
  // including descendants still holding the output pipes after the leader was reaped. The
  // group id cannot be reused while any member lives, so this is safe after the reap.
  int rc = ::kill(-pid_, signo);
  if (rc != 0 && !wait_status_) rc = ::kill(pid_, signo);
  if (rc != 0 && !wait_status_) return false;
  if (signo == SIGKILL || signo == SIGTERM) {
    skip_remaining_output_ = true;
    if (wait_status_) stop_readers();  // as envd: a kill stops waiting for output
  }
  return true;
}

void Process::on_exit(int wait_status) {
  wait_status_ = wait_status;
  // After SendSignal/deadline kills, don't wait for pipes held open by stray descendants.
  if (skip_remaining_output_) stop_readers();
  maybe_finish();
}

void Process::stop_readers() {
  boost::system::error_code ignored;
  if (stdout_) stdout_->cancel(ignored);
  if (stderr_) stderr_->cancel(ignored);
  if (pty_) pty_->cancel(ignored);
  hub_->drained().notify_all();
}

void Process::maybe_finish() {
  if (!wait_status_ || open_readers_ > 0 || hub_->ended()) return;
  // The lifetime deadline holds until the end: descendants may keep the output open.
  deadline_.cancel();
  boost::system::error_code ignored;
  if (stdin_) stdin_->close(ignored);
  if (stdout_) stdout_->close(ignored);
  if (stderr_) stderr_->close(ignored);
  if (pty_) pty_->close(ignored);
  hub_->publish_end(describe_wait_status(*wait_status_));
  if (on_finished) on_finished(*this);
}

net::awaitable<InputError> Process::write_input(net::posix::stream_descriptor& fd, std::string data) {
  auto self = shared_from_this();
  // One writer at a time keeps concurrent SendInput calls from interleaving partial writes.
  while (writing_) co_await write_turn_.wait();
  writing_ = true;
  boost::system::error_code ec;
  co_await net::async_write(fd, net::buffer(data), net::redirect_error(net::use_awaitable, ec));
  writing_ = false;
  write_turn_.notify_all();
  if (ec) co_return InputError{InputError::Kind::io, ec.message()};
  co_return InputError{};
}

net::awaitable<InputError> Process::write_stdin(std::string data) {
  if (pty_) {
    co_return InputError{InputError::Kind::not_supported,
                         "tty assigned to process \xe2\x80\x94 input should be written to the pty, not the stdin"};
  }
  if (!stdin_ || !stdin_->is_open()) co_return InputError{InputError::Kind::closed, "stdin not enabled or closed"};
  co_return co_await write_input(*stdin_, std::move(data));
}

net::awaitable<InputError> Process::write_pty(std::string data) {
  if (!pty_ || !pty_->is_open()) co_return InputError{InputError::Kind::not_supported, "tty not assigned to process"};
  co_return co_await write_input(*pty_, std::move(data));
}

InputError Process::close_stdin() {
  if (pty_) {
    return {InputError::Kind::not_supported,
            "cannot close stdin for PTY process \xe2\x80\x94 send Ctrl+D (0x04) instead"};
  }
  if (stdin_ && stdin_->is_open()) {
    boost::system::error_code ignored;
    stdin_->close(ignored);
  }
  return {};
}

InputError Process::resize(unsigned short cols, unsigned short rows) {
  if (!pty_ || !pty_->is_open()) return {InputError::Kind::not_supported, "tty not assigned to process"};
  winsize ws{};
  ws.ws_col = cols;
  ws.ws_row = rows;
  if (ioctl(pty_->native_handle(), TIOCSWINSZ, &ws) != 0) return {InputError::Kind::io, strerror(errno)};
  return {};
}

}  // namespace cove::process
