#include "rpc/process_service.hpp"

#include <sys/stat.h>

#include <cstring>

#include "process.pb.h"
#include "rpc/event_stream.hpp"
#include "system/paths.hpp"

namespace cove::rpc {
namespace {

using process::OutputEvent;
using process::OutputStream;

std::optional<process::Selector> to_selector(const ::process::ProcessSelector& s, Status& error) {
  switch (s.selector_case()) {
    case ::process::ProcessSelector::kPid: return process::Selector{s.pid(), std::nullopt};
    case ::process::ProcessSelector::kTag: return process::Selector{std::nullopt, s.tag()};
    default:
      error = {Code::unimplemented, "invalid process selector: set pid or tag"};
      return std::nullopt;
  }
}

Status not_found(const ::process::ProcessSelector& s) {
  if (s.selector_case() == ::process::ProcessSelector::kTag) {
    return {Code::not_found, "process with tag " + s.tag() + " not found"};
  }
  return {Code::not_found, "process with pid " + std::to_string(s.pid()) + " not found"};
}

void fill_event(const OutputEvent& ev, ::process::ProcessEvent& out) {
  if (ev.kind == OutputEvent::Kind::end) {
    auto* end = out.mutable_end();
    end->set_exit_code(ev.exit.exit_code);
    end->set_exited(ev.exit.exited);
    end->set_status(ev.exit.status);
    if (ev.exit.error) end->set_error(*ev.exit.error);
    return;
  }
  auto* data = out.mutable_data();
  switch (ev.stream) {
    case OutputStream::stdout_stream: data->set_stdout(ev.bytes); break;
    case OutputStream::stderr_stream: data->set_stderr(ev.bytes); break;
    case OutputStream::pty: data->set_pty(ev.bytes); break;
  }
}

// Streams a process's events until its end, the call's deadline or the client leaving.
template <typename Response>
net::awaitable<Status> stream_events(CallContext& ctx, ServerStream& stream, pid_t pid,
                                     process::Subscription& sub) {
  Response start;
  start.mutable_event()->mutable_start()->set_pid(static_cast<uint32_t>(pid));
  if (!co_await stream.send(start)) co_return Status{Code::canceled, "client disconnected"};
  bool ended = false;
  co_return co_await run_event_stream<Response>(
      ctx, stream, sub.wake(),
      [&](Response& msg) {
        if (ended) return false;  // nothing follows the end event
        auto ev = sub.pop();
        if (!ev) return false;
        msg.Clear();
        fill_event(*ev, *msg.mutable_event());
        ended = ev->kind == OutputEvent::Kind::end;
        return true;
      },
      [&]() -> std::optional<Status> {
        if (ended) return Status{};
        return std::nullopt;
      },
      [](Response& msg) {
        msg.Clear();
        msg.mutable_event()->mutable_keepalive();
      });
}

std::string describe_command(const ::process::ProcessConfig& cfg) {
  std::string s = cfg.cmd();
  for (const auto& a : cfg.args()) s += " " + a;
  return s;
}

Status input_status(const char* what, const process::InputError& err) {
  return {Code::internal, std::string("error writing to ") + what + ": " + err.message};
}

}  // namespace

void register_process_service(ConnectRouter& router, ProcessServiceDeps deps) {
  auto d = std::make_shared<ProcessServiceDeps>(std::move(deps));

  router.server_stream<::process::StartRequest>(
      "/process.Process/Start",
      [d](CallContext& ctx, const ::process::StartRequest& req, ServerStream& stream) -> net::awaitable<Status> {
        Status st;
        auto user = d->resolve_user(ctx.exchange, st);
        if (!user) co_return st;
        const auto& cfg = req.process();
        auto cwd = system::resolve_path(cfg.has_cwd() ? cfg.cwd() : "", *user, d->state.default_workdir());
        if (!cwd.ok()) co_return Status{Code::invalid_argument, cwd.error};
        struct stat sb{};
        if (stat(cwd.path.c_str(), &sb) != 0) {
          co_return Status{Code::invalid_argument, "cwd '" + cwd.path + "' does not exist"};
        }
        if (!S_ISDIR(sb.st_mode)) {
          co_return Status{Code::invalid_argument, "cwd '" + cwd.path + "' is not a directory"};
        }

        process::StartRequest start;
        // Later entries win: base identity, then sandbox-wide vars, then the request's.
        std::map<std::string, std::string> env{{"PATH", d->agent_path},
                                               {"HOME", user->home},
                                               {"USER", user->name},
                                               {"LOGNAME", user->name}};
        for (const auto& [k, v] : d->state.global_env()) env[k] = v;
        for (const auto& [k, v] : cfg.envs()) env[k] = v;
        for (const auto& [k, v] : env) start.spawn.env.push_back(k + "=" + v);
        start.spawn.command = cfg.cmd();
        start.spawn.args.assign(cfg.args().begin(), cfg.args().end());
        start.spawn.cwd = cwd.path;
        start.spawn.uid = user->uid;
        start.spawn.gid = user->gid;
        start.spawn.groups = user->groups;
        start.spawn.stdin_mode =
            (!req.has_stdin() || req.stdin()) ? process::StdinMode::pipe : process::StdinMode::null;
        if (req.has_pty()) {
          winsize ws{};
          ws.ws_col = static_cast<unsigned short>(req.pty().size().cols());
          ws.ws_row = static_cast<unsigned short>(req.pty().size().rows());
          start.spawn.pty = ws;
        }
        start.config.cmd = cfg.cmd();
        start.config.args.assign(cfg.args().begin(), cfg.args().end());
        start.config.envs.insert(cfg.envs().begin(), cfg.envs().end());
        if (cfg.has_cwd()) start.config.cwd = cfg.cwd();
        if (req.has_tag()) start.tag = req.tag();
        start.lifetime = ctx.timeout;

        int err = 0;
        auto started = d->registry.start(std::move(start), &err);
        if (!started) {
          const char* kind = req.has_pty() ? "error starting pty with command '" : "error starting process '";
          co_return Status{Code::invalid_argument, kind + describe_command(cfg) + "': " + std::strerror(err)};
        }
        co_return co_await stream_events<::process::StartResponse>(ctx, stream, started->process->pid(),
                                                                   *started->subscription);
      });

  router.server_stream<::process::ConnectRequest>(
      "/process.Process/Connect",
      [d](CallContext& ctx, const ::process::ConnectRequest& req, ServerStream& stream) -> net::awaitable<Status> {
        Status st;
        auto sel = to_selector(req.process(), st);
        if (!sel) co_return st;
        auto proc = d->registry.find_any(*sel);
        if (!proc) co_return not_found(req.process());
        auto sub = proc->output().subscribe(true);
        co_return co_await stream_events<::process::ConnectResponse>(ctx, stream, proc->pid(), *sub);
      });

  router.unary<::process::ListRequest, ::process::ListResponse>(
      "/process.Process/List",
      [d](CallContext&, const ::process::ListRequest&, ::process::ListResponse& resp) -> net::awaitable<Status> {
        for (const auto& p : d->registry.list_live()) {
          auto* info = resp.add_processes();
          info->set_pid(static_cast<uint32_t>(p->pid()));
          if (p->tag()) info->set_tag(*p->tag());
          auto* cfg = info->mutable_config();
          cfg->set_cmd(p->config().cmd);
          for (const auto& a : p->config().args) cfg->add_args(a);
          for (const auto& [k, v] : p->config().envs) (*cfg->mutable_envs())[k] = v;
          if (p->config().cwd) cfg->set_cwd(*p->config().cwd);
        }
        co_return Status{};
      });

  router.unary<::process::SendInputRequest, ::process::SendInputResponse>(
      "/process.Process/SendInput",
      [d](CallContext&, const ::process::SendInputRequest& req, ::process::SendInputResponse&) -> net::awaitable<Status> {
        Status st;
        auto sel = to_selector(req.process(), st);
        if (!sel) co_return st;
        auto proc = d->registry.find_live(*sel);
        if (!proc) co_return not_found(req.process());
        if (req.input().input_case() == ::process::ProcessInput::kStdin) {
          auto err = co_await proc->write_stdin(req.input().stdin());
          if (!err.ok()) co_return input_status("stdin", err);
        } else if (req.input().input_case() == ::process::ProcessInput::kPty) {
          auto err = co_await proc->write_pty(req.input().pty());
          if (!err.ok()) co_return input_status("pty", err);
        }
        co_return Status{};
      });

  router.client_stream<::process::StreamInputRequest, ::process::StreamInputResponse>(
      "/process.Process/StreamInput",
      [d](CallContext&, ClientStream& in, ::process::StreamInputResponse&) -> net::awaitable<Status> {
        ::process::StreamInputRequest msg;
        Status st;
        std::shared_ptr<process::Process> proc;
        while (co_await in.next(msg, st)) {
          switch (msg.event_case()) {
            case ::process::StreamInputRequest::kStart: {
              if (proc) co_return Status{Code::invalid_argument, "stream already started"};
              auto sel = to_selector(msg.start().process(), st);
              if (!sel) co_return st;
              proc = d->registry.find_live(*sel);
              if (!proc) co_return not_found(msg.start().process());
              break;
            }
            case ::process::StreamInputRequest::kData: {
              // envd dereferences a nil process here and drops the connection.
              if (!proc) co_return Status{Code::invalid_argument, "first message must be a start event"};
              const auto& input = msg.data().input();
              process::InputError err;
              if (input.input_case() == ::process::ProcessInput::kStdin) {
                err = co_await proc->write_stdin(input.stdin());
                if (!err.ok()) co_return input_status("stdin", err);
              } else if (input.input_case() == ::process::ProcessInput::kPty) {
                err = co_await proc->write_pty(input.pty());
                if (!err.ok()) co_return input_status("pty", err);
              }
              break;
            }
            default:
              break;  // keepalive
          }
        }
        if (!st.ok()) co_return Status{Code::unknown, "error streaming input: " + st.message};
        co_return Status{};
      });

  router.unary<::process::CloseStdinRequest, ::process::CloseStdinResponse>(
      "/process.Process/CloseStdin",
      [d](CallContext&, const ::process::CloseStdinRequest& req, ::process::CloseStdinResponse&) -> net::awaitable<Status> {
        Status st;
        auto sel = to_selector(req.process(), st);
        if (!sel) co_return st;
        auto proc = d->registry.find_live(*sel);
        if (!proc) co_return not_found(req.process());
        auto err = proc->close_stdin();
        if (!err.ok()) co_return Status{Code::unknown, "error closing stdin: " + err.message};
        co_return Status{};
      });

  router.unary<::process::SendSignalRequest, ::process::SendSignalResponse>(
      "/process.Process/SendSignal",
      [d](CallContext&, const ::process::SendSignalRequest& req, ::process::SendSignalResponse&) -> net::awaitable<Status> {
        int signo = 0;
        switch (req.signal()) {
          case ::process::SIGNAL_SIGTERM: signo = SIGTERM; break;
          case ::process::SIGNAL_SIGKILL: signo = SIGKILL; break;
          default: {
            const std::string& name = ::process::Signal_Name(req.signal());
            co_return Status{Code::unimplemented,
                             "invalid signal: " + (name.empty() ? std::to_string(req.signal()) : name)};
          }
        }
        Status st;
        auto sel = to_selector(req.process(), st);
        if (!sel) co_return st;
        auto proc = d->registry.find_live(*sel);
        if (!proc) co_return not_found(req.process());
        if (!proc->signal(signo)) co_return Status{Code::internal, std::string("error sending signal: ") + std::strerror(errno)};
        co_return Status{};
      });

  router.unary<::process::UpdateRequest, ::process::UpdateResponse>(
      "/process.Process/Update",
      [d](CallContext&, const ::process::UpdateRequest& req, ::process::UpdateResponse&) -> net::awaitable<Status> {
        Status st;
        auto sel = to_selector(req.process(), st);
        if (!sel) co_return st;
        auto proc = d->registry.find_live(*sel);
        if (!proc) co_return not_found(req.process());
        if (req.has_pty()) {
          auto err = proc->resize(static_cast<unsigned short>(req.pty().size().cols()),
                                  static_cast<unsigned short>(req.pty().size().rows()));
          if (!err.ok()) co_return Status{Code::internal, "error resizing tty: " + err.message};
        }
        co_return Status{};
      });
}

}  // namespace cove::rpc
