#include "net/splice.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace cove::netio {
namespace {
constexpr unsigned kChunk = 64 * 1024;
constexpr uintptr_t kWakeTag = 1;

void make_blocking(int fd) {
  // io_uring punts a would-block splice to a worker that then blocks; a non-blocking socket
  // would turn that into -EAGAIN instead.
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}
}  // namespace

struct Splicer::Direction {
  Session* session = nullptr;
  int src = -1, dst = -1;
  int pipe_r = -1, pipe_w = -1;
  size_t in_pipe = 0;
  bool done = false;
};

struct Splicer::Session {
  int fds[2] = {-1, -1};
  Direction dirs[2];
  int inflight = 0;
  bool aborted = false;
};

// user_data: the Direction pointer with the low bit marking the pipe→socket op (pointers are
// at least 8-byte aligned; kWakeTag=1 alone marks the eventfd read).
static uint64_t tag(void* d, bool out_op) { return reinterpret_cast<uintptr_t>(d) | (out_op ? 2 : 0) | 4; }

Splicer::~Splicer() { stop(); }

bool Splicer::start(std::string* error) {
  if (running()) return true;
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    *error = std::string("eventfd: ") + strerror(errno);
    return false;
  }
  int rc = io_uring_queue_init(256, &ring_, 0);
  if (rc < 0) {
    *error = std::string("io_uring_queue_init: ") + strerror(-rc);
    close(wake_fd_);
    wake_fd_ = -1;
    return false;
  }
  ring_ready_ = true;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
  return true;
}

void Splicer::stop() {
  if (thread_.joinable()) {
    stopping_ = true;
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
    thread_.join();  // the thread ends its sessions first; its exit ends its io_uring workers
  }
  if (ring_ready_) io_uring_queue_exit(&ring_);
  ring_ready_ = false;
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
  // Sockets handed over after the thread's last look.
  std::vector<std::pair<int, int>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(pending_);
  }
  for (auto [a, b] : left) {
    close(a);
    close(b);
  }
  stopping_ = false;
}

bool Splicer::add(int fd_a, int fd_b) {
  std::string error;
  if (!running() && !start(&error)) {
    close(fd_a);
    close(fd_b);
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.emplace_back(fd_a, fd_b);
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  return true;
}

void Splicer::arm_wakeup() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  io_uring_prep_read(sqe, wake_fd_, &wake_buf_, sizeof wake_buf_, 0);
  io_uring_sqe_set_data64(sqe, kWakeTag);
}

void Splicer::run() {
  arm_wakeup();
  io_uring_submit(&ring_);
  while (!stopping_) {
    io_uring_cqe* cqe = nullptr;
    int rc = io_uring_wait_cqe(&ring_, &cqe);
    if (rc == -EINTR) continue;
    if (rc < 0) break;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      uint64_t data = io_uring_cqe_get_data64(cqe);
      if (data == kWakeTag) {
        accept_pending();
        if (!stopping_) arm_wakeup();
        continue;
      }
      auto* d = reinterpret_cast<Direction*>(data & ~uint64_t(7));
      complete(d, (data & 2) != 0, cqe->res);
    }
    io_uring_cq_advance(&ring_, seen);
    io_uring_submit(&ring_);
  }
  drain_and_exit();
}

void Splicer::drain_and_exit() {
  // Aborting shuts both sockets down, which wakes every splice blocked on them.
  std::vector<Session*> all(sessions_.begin(), sessions_.end());
  for (auto* s : all) {
    abort(s);
    maybe_free(s);
  }
  io_uring_submit(&ring_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!sessions_.empty() && std::chrono::steady_clock::now() < deadline) {
    io_uring_cqe* cqe = nullptr;
    __kernel_timespec wait{0, 100 * 1000 * 1000};
    int rc = io_uring_wait_cqe_timeout(&ring_, &cqe, &wait);
    if (rc == -ETIME || rc == -EINTR) continue;
    if (rc < 0) break;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      uint64_t data = io_uring_cqe_get_data64(cqe);
      if (data == kWakeTag) continue;
      auto* d = reinterpret_cast<Direction*>(data & ~uint64_t(7));
      complete(d, (data & 2) != 0, cqe->res);
    }
    io_uring_cq_advance(&ring_, seen);
    io_uring_submit(&ring_);
  }
  // Still in flight past the deadline: the ring's exit cancels those operations (they hold their
  // own file references), so the descriptors and the memory can go now.
  for (auto* s : std::vector<Session*>(sessions_.begin(), sessions_.end())) {
    s->inflight = 0;
    maybe_free(s);
  }
}

void Splicer::accept_pending() {
  std::vector<std::pair<int, int>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(pending_);
  }
  for (auto [a, b] : batch) {
    auto* s = new Session;
    s->fds[0] = a;
    s->fds[1] = b;
    make_blocking(a);
    make_blocking(b);
    bool ok = true;
    for (int i = 0; i < 2; ++i) {
      Direction& d = s->dirs[i];
      d.session = s;
      d.src = s->fds[i];
      d.dst = s->fds[1 - i];
      int p[2];
      if (pipe2(p, O_CLOEXEC) != 0) {
        ok = false;
        d.done = true;
        continue;
      }
      d.pipe_r = p[0];
      d.pipe_w = p[1];
    }
    ++active_;
    sessions_.insert(s);
    if (!ok) {
      abort(s);
      maybe_free(s);
      continue;
    }
    begin(s);
  }
}

void Splicer::begin(Session* s) {
  submit_in(&s->dirs[0]);
  submit_in(&s->dirs[1]);
}

void Splicer::submit_in(Direction* d) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (!sqe) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  io_uring_prep_splice(sqe, d->src, -1, d->pipe_w, -1, kChunk, SPLICE_F_MOVE);
  io_uring_sqe_set_data64(sqe, tag(d, false));
  ++d->session->inflight;
}

void Splicer::submit_out(Direction* d) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (!sqe) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  io_uring_prep_splice(sqe, d->pipe_r, -1, d->dst, -1, static_cast<unsigned>(d->in_pipe), SPLICE_F_MOVE);
  io_uring_sqe_set_data64(sqe, tag(d, true));
  ++d->session->inflight;
}

void Splicer::complete(Direction* d, bool out_op, int res) {
  Session* s = d->session;
  --s->inflight;
  if (s->aborted) {
    maybe_free(s);
    return;
  }
  if (res < 0 && res != -EAGAIN && res != -EINTR) {
    abort(s);
    maybe_free(s);
    return;
  }
  if (res == -EAGAIN || res == -EINTR) {
    out_op ? submit_out(d) : submit_in(d);
    return;
  }
  if (!out_op) {
    if (res == 0) {
      // EOF from this side: pass the half-close on and let the other direction finish.
      shutdown(d->dst, SHUT_WR);
      d->done = true;
      maybe_free(s);
      return;
    }
    d->in_pipe = static_cast<size_t>(res);
    submit_out(d);
    return;
  }
  if (res == 0) {
    abort(s);
    maybe_free(s);
    return;
  }
  d->in_pipe -= static_cast<size_t>(res);
  d->in_pipe > 0 ? submit_out(d) : submit_in(d);
}

void Splicer::abort(Session* s) {
  if (s->aborted) return;
  s->aborted = true;
  // Wakes any splice still blocked in a worker on either socket.
  shutdown(s->fds[0], SHUT_RDWR);
  shutdown(s->fds[1], SHUT_RDWR);
}

void Splicer::maybe_free(Session* s) {
  bool finished = s->aborted || (s->dirs[0].done && s->dirs[1].done);
  if (!finished || s->inflight > 0) return;
  for (auto& d : s->dirs) {
    if (d.pipe_r >= 0) close(d.pipe_r);
    if (d.pipe_w >= 0) close(d.pipe_w);
  }
  close(s->fds[0]);
  close(s->fds[1]);
  sessions_.erase(s);
  delete s;
  --active_;
}

}  // namespace cove::netio
