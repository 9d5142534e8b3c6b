#include "interpreter/jupyter_kernel.hpp"

#include "text/uuid.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "async/event.hpp"
#include "interpreter/jupyter_message.hpp"
#include "interpreter/zmtp_connection.hpp"
#include "process/spawn.hpp"

namespace cove::interpreter {
namespace {

using Clock = std::chrono::steady_clock;
using Status = ExecutionFinished::Status;

std::string random_key() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw KernelError("no randomness for the kernel's signing key");
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

// Five distinct free loopback ports: all bound at once (so they differ), then released for the
// kernel to bind. Another process could take one in between; the kernel then dies at startup
// and launch() tries again with new ports.
std::array<uint16_t, 5> pick_ports() {
  std::array<int, 5> fds{};
  fds.fill(-1);
  std::array<uint16_t, 5> ports{};
  int err = 0;
  for (size_t i = 0; i < fds.size() && err == 0; ++i) {
    fds[i] = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fds[i] < 0 || ::bind(fds[i], reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fds[i], reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      err = errno;
    } else {
      ports[i] = ntohs(addr.sin_port);
    }
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  if (err != 0) throw KernelError(std::string("cannot reserve loopback ports for the kernel: ") + strerror(err));
  return ports;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// "KEY=value" environment with replace-or-append, keeping the caller's order.
class Environment {
 public:
  explicit Environment(const std::vector<std::string>& entries) {
    for (const auto& e : entries) {
      auto eq = e.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      set(e.substr(0, eq), e.substr(eq + 1));
    }
  }
  void set(const std::string& key, const std::string& value) {
    auto it = index_.find(key);
    if (it == index_.end()) {
      index_[key] = entries_.size();
      entries_.push_back(key + "=" + value);
    } else {
      entries_[it->second] = key + "=" + value;
    }
  }
  void erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
    index_.clear();
    for (size_t i = 0; i < entries_.size(); ++i) index_[entries_[i].substr(0, entries_[i].find('='))] = i;
  }
  std::string get(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? std::string() : entries_[it->second].substr(key.size() + 1);
  }
  // jupyter_client expands ${NAME} in kernelspec env values from the environment.
  std::string expand(const std::string& value) const {
    std::string out;
    for (size_t i = 0; i < value.size();) {
      if (value.compare(i, 2, "${") == 0) {
        auto close = value.find('}', i + 2);
        if (close != std::string::npos) {
          out += get(value.substr(i + 2, close - i - 2));
          i = close + 1;
          continue;
        }
      }
      out.push_back(value[i++]);
    }
    return out;
  }
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  std::vector<std::string> entries_;
  std::map<std::string, size_t> index_;
};

std::string json_string(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

struct JupyterKernel::Impl : std::enable_shared_from_this<JupyterKernel::Impl> {
  enum class Channel { shell, iopub, control };
  enum class State { stopped, starting, running, relaunching, failed, shut_down };

  // One kernel process and its connections; replaced on every (re)launch.
  struct Instance {
    pid_t pid = -1;
    bool exited = false;
    int wait_status = 0;
    std::string connection_file;
    uint16_t shell_port = 0, iopub_port = 0, control_port = 0;
    std::shared_ptr<ZmtpConnection> shell, iopub, control;
    bool broken = false;  // a connection failed
    std::string broken_reason;
    std::set<std::string> info_requests;  // the handshake's kernel_info_request msg_ids
    bool info_replied = false;
    bool iopub_seen = false;
  };

  struct Execution {
    std::string msg_id;
    bool silent = false;
    EventSink sink;
    bool accepted = false;  // execute_input (or busy, for silent cells)
    bool ran = false;       // execute_input: the kernel started running the code
    bool errored = false;
    bool reply_seen = false;
    bool idle_seen = false;
    Clock::time_point idle_at;
    bool finished = false;
    int resends = 0;
    bool resend_due = false;
  };
  static constexpr int kMaxResends = 3;

  // Releases the lifecycle lock however the holder leaves (return or exception).
  struct LifecycleGuard {
    Impl* impl;
    ~LifecycleGuard() {
      impl->lifecycle_busy = false;
      impl->changed.notify_all();
    }
  };

  Impl(KernelServices s, KernelLaunch l, Kernelspec k, Timeouts t)
      : services(std::move(s)),
        launch_spec(std::move(l)),
        spec(std::move(k)),
        timeouts(t),
        session(text::random_uuid4()),
        key_hex(random_key()),
        signer(key_hex),
        changed(services.executor) {}

  KernelServices services;
  KernelLaunch launch_spec;
  Kernelspec spec;
  Timeouts timeouts;
  std::string session;
  std::string key_hex;  // the connection file's key (fresh per kernel object)
  MessageSigner signer;
  async::Event changed;  // anything happened: waiters re-check their condition
  State state = State::stopped;
  std::string failure;  // why the last launch failed (State::failed)
  bool lifecycle_busy = false;
  std::shared_ptr<Instance> instance;
  Execution* current = nullptr;

  std::string log_path() const { return launch_spec.runtime_dir + "/kernel.log"; }

  // ---- lifecycle ----------------------------------------------------------------------------

  net::awaitable<void> lock_lifecycle() {
    while (lifecycle_busy) co_await changed.wait();
    lifecycle_busy = true;
  }

  net::awaitable<void> start() {
    auto self = shared_from_this();
    co_await lock_lifecycle();
    LifecycleGuard guard{this};
    if (state == State::running) co_return;
    if (state == State::shut_down) throw KernelError("the kernel was shut down");
    state = State::starting;
    co_await launch_or_fail();
  }

  net::awaitable<void> launch_or_fail() {
    try {
      co_await launch();
      state = State::running;
      failure.clear();
    } catch (const KernelError& e) {
      state = State::failed;
      failure = e.what();
      throw;
    }
  }

  net::awaitable<void> restart() {
    auto self = shared_from_this();
    co_await lock_lifecycle();
    LifecycleGuard guard{this};
    if (state == State::shut_down) throw KernelError("the kernel was shut down");
    state = State::relaunching;
    if (current) finish(*current, Status::restarting);
    co_await stop_instance(instance, true, timeouts.restart_grace);
    co_await launch_or_fail();
  }

  net::awaitable<void> shutdown() {
    auto self = shared_from_this();
    co_await lock_lifecycle();
    LifecycleGuard guard{this};
    if (state == State::shut_down) co_return;
    state = State::shut_down;
    if (current) finish(*current, Status::lost);
    co_await stop_instance(instance, false, timeouts.shutdown_grace);
  }

  // The kernel object is going away: no waiting, just make sure nothing is left running.
  void destroy() {
    state = State::shut_down;
    if (current) current->finished = true;  // its sink may be gone with the caller
    current = nullptr;
    if (instance) {
      if (!instance->exited) kill_group(*instance, SIGKILL);
      close_connections(*instance);
      ::unlink(instance->connection_file.c_str());
    }
    changed.notify_all();
  }

  // After an unexpected death: a fresh process, as Jupyter's restarter does.
  net::awaitable<void> relaunch_after_death() {
    auto self = shared_from_this();
    co_await lock_lifecycle();
    LifecycleGuard guard{this};
    if (state != State::relaunching) co_return;  // restarted or shut down meanwhile
    co_await stop_instance(instance, false, std::chrono::milliseconds(0));
    try {
      co_await launch_or_fail();
    } catch (const KernelError&) {
      // Recorded in `failure`; the next execute reports it.
    }
  }

  // A new process up to a finished handshake. A process that dies during startup (e.g. a port
  // taken in the meantime) is tried again, a few times.
  net::awaitable<void> launch() {
    std::string error;
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto inst = spawn_process();
      instance = inst;
      try {
        co_await handshake(inst, Clock::now() + timeouts.startup);
        co_return;
      } catch (const KernelError& e) {
        error = e.what();
      }
      bool died = inst->exited;
      co_await stop_instance(inst, false, std::chrono::milliseconds(0));
      if (!died || state == State::shut_down) break;
    }
    throw KernelError(error);
  }

  std::shared_ptr<Instance> spawn_process() {
    if (launch_spec.runtime_dir.empty()) throw KernelError("the kernel has no runtime directory");
    if (::mkdir(launch_spec.runtime_dir.c_str(), 0700) != 0 && errno != EEXIST) {
      throw KernelError("cannot create the kernel's runtime directory: " + std::string(strerror(errno)));
    }
    if (!launch_spec.cwd.empty()) {
      struct stat st {};
      if (::stat(launch_spec.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        throw KernelError("the working directory " + launch_spec.cwd + " does not exist");
      }
    }
    auto inst = std::make_shared<Instance>();
    auto ports = pick_ports();
    inst->shell_port = ports[0];
    inst->iopub_port = ports[1];
    inst->control_port = ports[3];
    inst->connection_file = launch_spec.runtime_dir + "/kernel-" + session + ".json";
    nlohmann::json connection = {
        {"transport", "tcp"},       {"ip", "127.0.0.1"},         {"shell_port", ports[0]},
        {"iopub_port", ports[1]},   {"stdin_port", ports[2]},    {"control_port", ports[3]},
        {"hb_port", ports[4]},      {"key", key_hex},            {"signature_scheme", "hmac-sha256"},
        {"kernel_name", spec.name}};
    write_private_file(inst->connection_file, connection.dump(2));

    std::vector<std::string> argv = kernel_command(spec, inst->connection_file);
    Environment env(launch_spec.env);
    for (const auto& [k, v] : spec.env) env.set(k, env.expand(v));
    env.set("PYDEVD_DISABLE_FILE_VALIDATION", "1");  // silences a debugpy warning on Debian
    // ipykernel exits when its parent's pid is 1 and this is set; the agent is PID 1.
    env.erase("JPY_PARENT_PID");
    inst->pid = fork_exec(argv, env.entries());
    // Before any co_await: the reaper runs on this io_context and could otherwise reap it first.
    std::weak_ptr<Impl> weak = weak_from_this();
    std::weak_ptr<Instance> weak_inst = inst;
    services.processes->watch_exit(inst->pid, [weak, weak_inst](int status) {
      auto self = weak.lock();
      auto inst = weak_inst.lock();
      if (self && inst) self->on_exit(inst, status);
    });
    return inst;
  }

  void write_private_file(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw KernelError("cannot write the kernel's connection file: " + std::string(strerror(errno)));
    ::fchmod(fd, 0600);  // an existing file keeps its mode through O_CREAT
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::close(fd);
        throw KernelError("cannot write the kernel's connection file: " + std::string(strerror(err)));
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  }

  // The kernel leads its own session and process group (signals reach everything it starts),
  // starts in the context's cwd, reads /dev/null and appends its output to kernel.log.
  pid_t fork_exec(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    std::string log = log_path();
    int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0) throw KernelError("cannot open kernel.log: " + std::string(strerror(errno)));
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) {
      ::close(log_fd);
      throw KernelError("cannot open /dev/null: " + std::string(strerror(errno)));
    }
    // Everything the child touches is prepared here: between fork and exec it only makes
    // system calls.
    std::vector<std::string> candidates = process::executable_candidates(argv.front(), env);
    std::vector<char*> argv_c, env_c;
    for (const auto& a : argv) argv_c.push_back(const_cast<char*>(a.c_str()));
    argv_c.push_back(nullptr);
    for (const auto& e : env) env_c.push_back(const_cast<char*>(e.c_str()));
    env_c.push_back(nullptr);
    const char* cwd = launch_spec.cwd.empty() ? nullptr : launch_spec.cwd.c_str();
    static const char kExecFailed[] = "cove-agent: cannot execute the kernel command\n";
    static const char kChdirFailed[] = "cove-agent: cannot enter the kernel's working directory\n";

    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);  // no parent handler runs in the child
    pid_t pid = ::fork();
    if (pid == 0) {
      for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::setsid();
      ::dup2(null_fd, 0);
      ::dup2(log_fd, 1);
      ::dup2(log_fd, 2);
      ::syscall(SYS_close_range, 3U, ~0U, 0U);
      if (cwd && ::chdir(cwd) != 0) {
        (void)!::write(2, kChdirFailed, sizeof kChdirFailed - 1);
        ::_exit(126);
      }
      for (const auto& candidate : candidates) ::execve(candidate.c_str(), argv_c.data(), env_c.data());
      (void)!::write(2, kExecFailed, sizeof kExecFailed - 1);
      ::_exit(127);
    }
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    ::close(log_fd);
    ::close(null_fd);
    if (pid < 0) throw KernelError("cannot start the kernel process: " + std::string(strerror(fork_errno)));
    return pid;
  }

  net::awaitable<void> handshake(std::shared_ptr<Instance> inst, Clock::time_point deadline) {
    auto ex = services.executor;
    inst->shell = std::make_shared<ZmtpConnection>(ex, ZmtpSocketType::dealer, session);
    inst->iopub = std::make_shared<ZmtpConnection>(ex, ZmtpSocketType::sub);
    inst->control = std::make_shared<ZmtpConnection>(ex, ZmtpSocketType::dealer, session);
    try {
      co_await inst->shell->connect(inst->shell_port, deadline);
      co_await inst->iopub->connect(inst->iopub_port, deadline);
      std::string everything;
      inst->iopub->subscribe(everything);
      co_await inst->control->connect(inst->control_port, deadline);
    } catch (const ZmtpError& e) {
      throw KernelError(startup_failure(*inst, std::string("cannot connect to the kernel: ") + e.what()));
    }
    for (Channel ch : {Channel::shell, Channel::iopub, Channel::control}) {
      net::co_spawn(ex, read_loop(shared_from_this(), inst, ch), net::detached);
    }
    // iopub is a SUB: until our subscription reaches the kernel its messages are dropped, so
    // ask again until both a reply and some iopub traffic (the request's busy/idle) arrived.
    auto next_send = Clock::now();
    for (;;) {
      if (inst->exited || inst->broken || state == State::shut_down) {
        throw KernelError(startup_failure(*inst, "lost the connection to the kernel during startup: " +
                                                     inst->broken_reason));
      }
      if (inst->info_replied && inst->iopub_seen) co_return;
      auto now = Clock::now();
      if (now >= deadline) {
        throw KernelError("the kernel did not answer within " +
                          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeouts.startup).count()) +
                          " s (see kernel.log)");
      }
      if (now >= next_send) {
        std::string msg_id;
        try {
          send(*inst->shell, "kernel_info_request", nlohmann::json::object(), nlohmann::json::object(), &msg_id);
        } catch (const ZmtpError& e) {
          on_broken(inst, e.what());
          continue;
        }
        inst->info_requests.insert(msg_id);
        next_send = now + timeouts.handshake_resend;
      }
      co_await changed.wait_until(std::min(next_send, deadline));
    }
  }

  std::string startup_failure(const Instance& inst, const std::string& otherwise) const {
    if (state == State::shut_down) return "the kernel was shut down while starting";
    if (inst.exited) {
      return "the kernel exited during startup (" + describe_wait_status(inst.wait_status) + "; see kernel.log)";
    }
    return otherwise;
  }

  // Asks the kernel to stop, waits `grace`, then SIGKILLs its group; always ends with no
  // process left and the connections closed.
  net::awaitable<void> stop_instance(std::shared_ptr<Instance> inst, bool restart, std::chrono::milliseconds grace) {
    if (!inst) co_return;
    if (!inst->exited && grace.count() > 0 && inst->control && inst->control->is_open()) {
      // As jupyter_client: interrupt first, so a busy kernel gets to the shutdown request.
      interrupt_instance(*inst);
      try {
        send(*inst->control, "shutdown_request", {{"restart", restart}});
        auto deadline = Clock::now() + grace;
        while (!inst->exited && Clock::now() < deadline) co_await changed.wait_until(deadline);
      } catch (const ZmtpError&) {
        // The connection is gone: straight to SIGKILL.
      }
    }
    if (!inst->exited) {
      kill_group(*inst, SIGKILL);
      // The reaper reports the exit; bounded in case nobody reaps (no reaper running).
      auto deadline = Clock::now() + std::chrono::seconds(5);
      while (!inst->exited && Clock::now() < deadline) co_await changed.wait_until(deadline);
    }
    // What the kernel started in its group (`!cmd &`) outlives it otherwise.
    kill_group(*inst, SIGKILL);
    close_connections(*inst);
    ::unlink(inst->connection_file.c_str());
  }

  void kill_group(const Instance& inst, int signo) const {
    if (inst.pid > 0) ::kill(-inst.pid, signo);
  }

  static void close_connections(Instance& inst) {
    for (auto* conn : {&inst.shell, &inst.iopub, &inst.control}) {
      if (*conn) (*conn)->close();
    }
  }

  void on_exit(const std::shared_ptr<Instance>& inst, int wait_status) {
    inst->exited = true;
    inst->wait_status = wait_status;
    if (inst == instance && state == State::running) {
      // Died by itself: the running cell ends as ContextRestarting and a new process starts.
      state = State::relaunching;
      if (current) finish(*current, Status::restarting);
      close_connections(*inst);
      net::co_spawn(services.executor, relaunch_after_death(), net::detached);
    } else if (state != State::running) {
      close_connections(*inst);  // a startup in progress fails at once
    }
    changed.notify_all();
  }

  void on_broken(const std::shared_ptr<Instance>& inst, const std::string& reason) {
    if (inst->broken) return;
    inst->broken = true;
    inst->broken_reason = reason;
    changed.notify_all();
  }

  // ---- messages ------------------------------------------------------------------------------

  void send(ZmtpConnection& conn, const std::string& msg_type, nlohmann::json content,
            nlohmann::json metadata = nlohmann::json::object(), std::string* msg_id = nullptr) {
    JupyterMessage m;
    m.header = make_header(msg_type, session, "e2b");
    m.content = std::move(content);
    m.metadata = std::move(metadata);
    if (msg_id) *msg_id = m.header["msg_id"].get<std::string>();
    conn.send(signer.encode(m));
  }

  static net::awaitable<void> read_loop(std::shared_ptr<Impl> self, std::shared_ptr<Instance> inst, Channel channel) {
    auto conn = channel == Channel::shell ? inst->shell : channel == Channel::iopub ? inst->iopub : inst->control;
    for (;;) {
      std::vector<std::string> frames;
      try {
        frames = co_await conn->receive();
      } catch (const ZmtpError& e) {
        if (self->instance == inst) self->on_broken(inst, e.what());
        co_return;
      }
      if (self->instance != inst) co_return;  // replaced by a newer process
      JupyterMessage msg;
      try {
        msg = self->signer.decode(frames);
      } catch (const JupyterMessageError&) {
        continue;  // unsigned or garbled: not from our kernel, drop it
      }
      self->dispatch(inst, channel, msg);
    }
  }

  void dispatch(const std::shared_ptr<Instance>& inst, Channel channel, const JupyterMessage& msg) {
    const std::string type = msg.msg_type();
    const std::string parent = msg.parent_msg_id();
    if (channel == Channel::iopub && !inst->iopub_seen) {
      inst->iopub_seen = true;
      changed.notify_all();
    }
    if (channel == Channel::shell && type == "kernel_info_reply" && inst->info_requests.count(parent)) {
      inst->info_replied = true;
      changed.notify_all();
      return;
    }
    Execution* exec = current;
    if (!exec || exec->finished || parent.empty() || parent != exec->msg_id) return;
    const auto& content = msg.content;
    if (channel == Channel::iopub) {
      if (type == "status") {
        std::string state_name = json_string(content, "execution_state");
        if (state_name == "busy" && exec->silent) exec->accepted = true;
        if (state_name == "idle") {
          exec->idle_seen = true;
          exec->idle_at = Clock::now();
          // The reply normally comes first (ipykernel sends it before idle), but on another
          // socket: wait for it so its error is not lost.
          if (exec->reply_seen) finish(*exec, Status::ok);
          changed.notify_all();
        }
      } else if (type == "execute_input") {
        exec->accepted = true;
        exec->ran = true;
        if (!exec->silent) {
          auto count = content.find("execution_count");
          emit(*exec, ExecutionStarted{count != content.end() && count->is_number_integer() ? count->get<int64_t>() : 0});
        }
      } else if (type == "stream") {
        std::string timestamp = to_python_isoformat(json_string(msg.header, "date"));
        if (timestamp.empty()) timestamp = to_python_isoformat(jupyter_now());
        emit(*exec, StreamOutput{json_string(content, "name") == "stderr", json_string(content, "text"), timestamp});
      } else if (type == "execute_result" || type == "display_data") {
        auto data = content.find("data");
        DisplayOutput out;
        if (data != content.end() && data->is_object()) out.data = *data;
        out.is_main_result = type == "execute_result";
        emit(*exec, std::move(out));
      } else if (type == "error") {
        report_error(*exec, content);
      }
      // update_display_data, clear_output, comms: not part of E2B's stream.
    } else if (channel == Channel::shell && type == "execute_reply") {
      exec->reply_seen = true;
      std::string status = json_string(content, "status");
      if (status == "error") report_error(*exec, content);
      if (status == "abort" || status == "aborted") {
        if (!exec->ran && exec->resends < kMaxResends) {
          // The cell never ran. With stop_on_error, ipykernel aborts every request that reaches
          // it in the moment after an error; as executions are serialized, that can only be
          // this race (e.g. a cell sent right after an interrupt), so send it again.
          // Forget the aborted request now, so its idle (which follows) cannot end the cell.
          exec->msg_id.clear();
          exec->reply_seen = false;
          exec->idle_seen = false;
          exec->accepted = false;
          exec->resend_due = true;
        } else {
          finish(*exec, Status::aborted);
        }
      } else if (exec->idle_seen) {
        finish(*exec, Status::ok);
      }
      changed.notify_all();
    }
  }

  // An iopub error and an error execute_reply describe the same error: report it once.
  void report_error(Execution& exec, const nlohmann::json& content) {
    if (exec.errored) return;
    exec.errored = true;
    // E2B concatenates the entries as they are; newer IPythons end each with a newline, Debian's
    // 8.5 does not, so one is added where missing to keep the traceback readable.
    std::string traceback;
    if (auto tb = content.find("traceback"); tb != content.end() && tb->is_array()) {
      for (const auto& line : *tb) {
        if (!line.is_string()) continue;
        if (!traceback.empty() && traceback.back() != '\n') traceback += '\n';
        traceback += line.get<std::string>();
      }
    }
    emit(exec, ExecutionFailed{json_string(content, "ename"), json_string(content, "evalue"), traceback});
  }

  void emit(Execution& exec, ExecutionEvent event) {
    if (exec.finished || !exec.sink) return;
    try {
      exec.sink(std::move(event));
    } catch (...) {
      // A failing consumer must not take the socket reader down with it.
    }
  }

  void finish(Execution& exec, Status status) {
    if (exec.finished) return;
    emit(exec, ExecutionFinished{status});
    exec.finished = true;
    changed.notify_all();
  }

  // ---- execution -----------------------------------------------------------------------------

  net::awaitable<void> wait_until_running() {
    for (;;) {
      switch (state) {
        case State::running:
          if (!lifecycle_busy) co_return;
          break;
        case State::failed: throw KernelError(failure);
        case State::shut_down: throw KernelError("the kernel was shut down");
        case State::stopped: throw KernelError("the kernel is not started");
        case State::starting:
        case State::relaunching: break;
      }
      co_await changed.wait();
    }
  }

  net::awaitable<void> execute(std::string code, bool silent, EventSink sink) {
    auto self = shared_from_this();
    co_await wait_until_running();
    auto inst = instance;
    Execution exec;
    exec.silent = silent;
    exec.sink = std::move(sink);
    current = &exec;
    struct Clear {
      Impl* impl;
      Execution* exec;
      ~Clear() {
        if (impl->current == exec) impl->current = nullptr;
      }
    } clear{this, &exec};

    nlohmann::json content = {{"code", code},
                              {"silent", silent},
                              {"store_history", !silent},
                              {"user_expressions", nlohmann::json::object()},
                              {"stop_on_error", true},
                              {"allow_stdin", false}};
    nlohmann::json metadata = {{"trusted", true},
                               {"deletedCells", nlohmann::json::array()},
                               {"recordTiming", false},
                               {"cellId", text::random_uuid4()}};
    auto send_request = [&] {
      try {
        send(*inst->shell, "execute_request", content, metadata, &exec.msg_id);
      } catch (const ZmtpError& e) {
        on_broken(inst, e.what());
      }
    };
    send_request();

    std::optional<Clock::time_point> broken_at;
    net::steady_timer pause(services.executor);
    while (!exec.finished) {
      if (exec.resend_due) {
        exec.resend_due = false;
        ++exec.resends;
        pause.expires_after(std::chrono::milliseconds(10 * exec.resends));
        boost::system::error_code ignored;
        co_await pause.async_wait(net::redirect_error(net::use_awaitable, ignored));
        if (exec.finished) break;
        send_request();  // a new msg_id: the aborted request's late messages are dropped
        continue;
      }
      if (state == State::shut_down) {
        finish(exec, Status::lost);
        break;
      }
      if (instance != inst) {  // replaced without passing through finish (defensive)
        finish(exec, Status::restarting);
        break;
      }
      auto now = Clock::now();
      auto wake = Clock::time_point::max();
      if (inst->broken && !inst->exited) {
        // A dying kernel breaks its sockets just before the reaper reports the exit: give the
        // exit a moment to arrive, so the cell ends as restarting rather than lost.
        if (!broken_at) broken_at = now;
        if (now - *broken_at >= timeouts.death_after_break) {
          finish(exec, Status::lost);
          break;
        }
        wake = *broken_at + timeouts.death_after_break;
      }
      if (exec.idle_seen && exec.accepted && !exec.reply_seen) {
        if (now - exec.idle_at >= timeouts.reply_after_idle) {
          finish(exec, Status::ok);
          break;
        }
        wake = std::min(wake, exec.idle_at + timeouts.reply_after_idle);
      }
      co_await changed.wait_until(wake);
    }
  }

  void interrupt() {
    auto inst = instance;
    if (!inst || state == State::shut_down) return;
    interrupt_instance(*inst);
  }

  void interrupt_instance(Instance& inst) {
    if (inst.exited) return;
    if (spec.interrupt_mode == "message") {
      try {
        if (inst.control && inst.control->is_open()) {
          send(*inst.control, "interrupt_request", nlohmann::json::object());
        }
      } catch (const ZmtpError&) {
        // Nothing to interrupt through a broken connection.
      }
    } else {
      kill_group(inst, SIGINT);
    }
  }
};

JupyterKernel::JupyterKernel(KernelServices services, KernelLaunch launch, Kernelspec spec)
    : JupyterKernel(std::move(services), std::move(launch), std::move(spec), Timeouts{}) {}

JupyterKernel::JupyterKernel(KernelServices services, KernelLaunch launch, Kernelspec spec, Timeouts timeouts) {
  if (!services.processes) throw KernelError("a Jupyter kernel needs the process registry");
  impl_ = std::make_shared<Impl>(std::move(services), std::move(launch), std::move(spec), timeouts);
}

JupyterKernel::~JupyterKernel() { impl_->destroy(); }

net::awaitable<void> JupyterKernel::start() {
  auto impl = impl_;
  co_await impl->start();
}

net::awaitable<void> JupyterKernel::execute(std::string code, bool silent, EventSink sink) {
  auto impl = impl_;
  co_await impl->execute(std::move(code), silent, std::move(sink));
}

void JupyterKernel::interrupt() { impl_->interrupt(); }

net::awaitable<void> JupyterKernel::restart() {
  auto impl = impl_;
  co_await impl->restart();
}

net::awaitable<void> JupyterKernel::shutdown() {
  auto impl = impl_;
  co_await impl->shutdown();
}

pid_t JupyterKernel::pid() const {
  auto& inst = impl_->instance;
  return inst && !inst->exited ? inst->pid : -1;
}

}  // namespace cove::interpreter
