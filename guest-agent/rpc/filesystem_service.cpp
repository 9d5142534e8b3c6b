#include "rpc/filesystem_service.hpp"

#include "rpc/event_stream.hpp"

#include <boost/asio/this_coro.hpp>

#include "filesystem.pb.h"
#include "filesystem/operations.hpp"
#include "filesystem/watcher.hpp"
#include "filesystem/watcher_registry.hpp"
#include "system/paths.hpp"

namespace cove::rpc {
namespace {

namespace cfs = ::cove::filesystem;
namespace pb = ::filesystem;

// A WatchDir client that reads slower than events arrive gets an error after this many
// undelivered events (the kernel's default inotify queue length), as envd's would overflow.
constexpr size_t kStreamMaxPending = 16384;

struct Shared {
  FilesystemServiceDeps deps;
  std::shared_ptr<cfs::WatcherRegistry> watchers = std::make_shared<cfs::WatcherRegistry>();
};

Status to_status(const cfs::OpError& e) {
  Code code = Code::internal;
  switch (e.kind) {
    case cfs::ErrorKind::none: return Status{};
    case cfs::ErrorKind::not_found: code = Code::not_found; break;
    case cfs::ErrorKind::already_exists: code = Code::already_exists; break;
    case cfs::ErrorKind::invalid_argument: code = Code::invalid_argument; break;
    case cfs::ErrorKind::failed_precondition: code = Code::failed_precondition; break;
    case cfs::ErrorKind::internal: code = Code::internal; break;
  }
  return {code, e.message};
}

// envd's legacy interceptor: the old Python SDK (User-Agent exactly "connect-python") only
// knows name/type/path entries and name/type events.
bool legacy_client(const http::Exchange& ex) { return ex.header("User-Agent") == "connect-python"; }

void mark_legacy(http::Exchange& ex) { ex.response_headers().set("X-E2B-Legacy-SDK", "true"); }

// Unary responses carry the marker only on success, as envd's interceptor adds it there.
bool legacy_success(http::Exchange& ex) {
  if (!legacy_client(ex)) return false;
  mark_legacy(ex);
  return true;
}

void fill_entry(const cfs::EntryInfo& e, pb::EntryInfo& out, bool legacy) {
  out.set_name(e.name);
  out.set_type(static_cast<pb::FileType>(e.type));
  out.set_path(e.path);
  if (legacy) return;
  out.set_size(e.size);
  out.set_mode(e.mode);
  out.set_permissions(e.permissions);
  out.set_owner(e.owner);
  out.set_group(e.group);
  if (e.modified_time) {
    out.mutable_modified_time()->set_seconds(e.modified_time->seconds);
    out.mutable_modified_time()->set_nanos(e.modified_time->nanos);
  }
  if (e.symlink_target) out.set_symlink_target(*e.symlink_target);
  for (const auto& [k, v] : e.metadata) (*out.mutable_metadata())[k] = v;
}

void fill_event(const cfs::WatchEvent& ev, pb::FilesystemEvent& out, bool legacy) {
  out.set_name(ev.name);
  out.set_type(static_cast<pb::EventType>(ev.type));
  if (!legacy && ev.entry) fill_entry(*ev.entry, *out.mutable_entry(), false);
}

// The calling user and the request path resolved for them (envd's GetAuthUser +
// ExpandAndResolve). False with `st` set on failure.
bool resolve(const Shared& d, CallContext& ctx, const std::string& raw, system::User& user, std::string& path,
             Status& st) {
  auto u = d.deps.resolve_user(ctx.exchange, st);
  if (!u) return false;
  auto p = system::resolve_path(raw, *u, d.deps.state.default_workdir());
  if (!p.ok()) {
    st = {Code::invalid_argument, p.error};
    return false;
  }
  user = std::move(*u);
  path = std::move(p.path);
  return true;
}

// Closes the stream's watcher however the handler ends.
struct CloseOnExit {
  std::shared_ptr<cfs::Watcher> watcher;
  ~CloseOnExit() { watcher->close(); }
};

// Streams a watcher's events until the client leaves, the deadline passes or the watcher fails.
net::awaitable<Status> stream_watch(CallContext& ctx, ServerStream& stream, cfs::Watcher& watcher, bool legacy) {
  pb::WatchDirResponse start;
  start.mutable_start();
  if (!co_await stream.send(start)) co_return Status{Code::canceled, "client disconnected"};
  co_return co_await run_event_stream<pb::WatchDirResponse>(
      ctx, stream, watcher.wake(),
      [&](pb::WatchDirResponse& msg) {
        auto ev = watcher.pop();
        if (!ev) return false;
        msg.Clear();
        fill_event(*ev, *msg.mutable_filesystem(), legacy);
        return true;
      },
      // Events that arrived before a failure are delivered first, then the failure ends the call.
      [&]() -> std::optional<Status> {
        if (watcher.error()) return Status{Code::internal, *watcher.error()};
        return std::nullopt;
      },
      [](pb::WatchDirResponse& msg) {
        msg.Clear();
        msg.mutable_keepalive();
      });
}

}  // namespace

void register_filesystem_service(ConnectRouter& router, FilesystemServiceDeps deps) {
  auto d = std::make_shared<Shared>(Shared{std::move(deps)});

  router.unary<pb::StatRequest, pb::StatResponse>(
      "/filesystem.Filesystem/Stat",
      [d](CallContext& ctx, const pb::StatRequest& req, pb::StatResponse& resp) -> net::awaitable<Status> {
        system::User user;
        std::string path;
        Status st;
        if (!resolve(*d, ctx, req.path(), user, path, st)) co_return st;
        auto r = cfs::stat_entry(path, d->deps.users);
        if (!r.ok()) co_return to_status(r.error);
        fill_entry(r.value, *resp.mutable_entry(), legacy_success(ctx.exchange));
        co_return Status{};
      });

  router.unary<pb::ListDirRequest, pb::ListDirResponse>(
      "/filesystem.Filesystem/ListDir",
      [d](CallContext& ctx, const pb::ListDirRequest& req, pb::ListDirResponse& resp) -> net::awaitable<Status> {
        system::User user;
        std::string path;
        Status st;
        if (!resolve(*d, ctx, req.path(), user, path, st)) co_return st;
        auto r = cfs::list_dir(path, req.depth(), d->deps.users);
        if (!r.ok()) co_return to_status(r.error);
        const bool legacy = legacy_success(ctx.exchange);
        for (const auto& e : r.value) fill_entry(e, *resp.add_entries(), legacy);
        co_return Status{};
      });

  router.unary<pb::MakeDirRequest, pb::MakeDirResponse>(
      "/filesystem.Filesystem/MakeDir",
      [d](CallContext& ctx, const pb::MakeDirRequest& req, pb::MakeDirResponse& resp) -> net::awaitable<Status> {
        system::User user;
        std::string path;
        Status st;
        if (!resolve(*d, ctx, req.path(), user, path, st)) co_return st;
        auto r = cfs::make_dir(path, user.uid, user.gid, d->deps.users);
        if (!r.ok()) co_return to_status(r.error);
        fill_entry(r.value, *resp.mutable_entry(), legacy_success(ctx.exchange));
        co_return Status{};
      });

  router.unary<pb::MoveRequest, pb::MoveResponse>(
      "/filesystem.Filesystem/Move",
      [d](CallContext& ctx, const pb::MoveRequest& req, pb::MoveResponse& resp) -> net::awaitable<Status> {
        system::User user;
        std::string source, destination;
        Status st;
        if (!resolve(*d, ctx, req.source(), user, source, st)) co_return st;
        if (!resolve(*d, ctx, req.destination(), user, destination, st)) co_return st;
        auto r = cfs::move_entry(source, destination, user.uid, user.gid, d->deps.users);
        if (!r.ok()) co_return to_status(r.error);
        fill_entry(r.value, *resp.mutable_entry(), legacy_success(ctx.exchange));
        co_return Status{};
      });

  router.unary<pb::RemoveRequest, pb::RemoveResponse>(
      "/filesystem.Filesystem/Remove",
      [d](CallContext& ctx, const pb::RemoveRequest& req, pb::RemoveResponse&) -> net::awaitable<Status> {
        system::User user;
        std::string path;
        Status st;
        if (!resolve(*d, ctx, req.path(), user, path, st)) co_return st;
        auto err = cfs::remove_all(path);
        if (!err.ok()) co_return to_status(err);
        legacy_success(ctx.exchange);
        co_return Status{};
      });

  router.server_stream<pb::WatchDirRequest>(
      "/filesystem.Filesystem/WatchDir",
      [d](CallContext& ctx, const pb::WatchDirRequest& req, ServerStream& stream) -> net::awaitable<Status> {
        system::User user;
        std::string path;
        Status st;
        if (!resolve(*d, ctx, req.path(), user, path, st)) co_return st;
        auto check = cfs::check_watch_path(path, req.allow_network_mounts());
        if (!check.ok()) co_return to_status(check);
        cfs::WatcherOptions options;
        options.recursive = req.recursive();
        options.include_entry = req.include_entry();
        options.max_pending = kStreamMaxPending;
        std::string error;
        auto executor = co_await net::this_coro::executor;
        auto watcher = cfs::Watcher::start(executor, system::clean_path(path), options, d->deps.users, error);
        if (!watcher) co_return Status{Code::internal, error};
        CloseOnExit guard{watcher};
        co_return co_await stream_watch(ctx, stream, *watcher, legacy_client(ctx.exchange));
      });
  // A stream's headers leave before its handler runs.
  router.set_stream_headers("/filesystem.Filesystem/WatchDir", [](http::Exchange& ex) {
    if (legacy_client(ex)) mark_legacy(ex);
  });

  router.unary<pb::CreateWatcherRequest, pb::CreateWatcherResponse>(
      "/filesystem.Filesystem/CreateWatcher",
      [d](CallContext& ctx, const pb::CreateWatcherRequest& req, pb::CreateWatcherResponse& resp) -> net::awaitable<Status> {
        system::User user;
        std::string path;
        Status st;
        if (!resolve(*d, ctx, req.path(), user, path, st)) co_return st;
        auto check = cfs::check_watch_path(path, req.allow_network_mounts());
        if (!check.ok()) co_return to_status(check);
        cfs::WatcherOptions options;
        options.recursive = req.recursive();
        options.include_entry = req.include_entry();
        options.max_pending = cfs::kPollingMaxEvents;
        std::string error;
        auto executor = co_await net::this_coro::executor;
        auto watcher = cfs::Watcher::start(executor, system::clean_path(path), options, d->deps.users, error);
        if (!watcher) co_return Status{Code::internal, error};
        d->watchers->reap_idle(Clock::now());
        resp.set_watcher_id(d->watchers->add(std::move(watcher), Clock::now()));
        d->watchers->ensure_reaper(executor);
        legacy_success(ctx.exchange);
        co_return Status{};
      });

  router.unary<pb::GetWatcherEventsRequest, pb::GetWatcherEventsResponse>(
      "/filesystem.Filesystem/GetWatcherEvents",
      [d](CallContext& ctx, const pb::GetWatcherEventsRequest& req, pb::GetWatcherEventsResponse& resp) -> net::awaitable<Status> {
        d->watchers->reap_idle(Clock::now());
        auto watcher = d->watchers->use(req.watcher_id(), Clock::now());
        if (!watcher) co_return Status{Code::not_found, "watcher with id " + req.watcher_id() + " not found"};
        // A failed watcher answers with its error on every call until it is removed.
        if (watcher->error()) co_return Status{Code::internal, *watcher->error()};
        const bool legacy = legacy_success(ctx.exchange);
        for (const auto& ev : watcher->take_all()) fill_event(ev, *resp.add_events(), legacy);
        co_return Status{};
      });

  router.unary<pb::RemoveWatcherRequest, pb::RemoveWatcherResponse>(
      "/filesystem.Filesystem/RemoveWatcher",
      [d](CallContext& ctx, const pb::RemoveWatcherRequest& req, pb::RemoveWatcherResponse&) -> net::awaitable<Status> {
        d->watchers->reap_idle(Clock::now());
        if (!d->watchers->remove(req.watcher_id())) {
          co_return Status{Code::not_found, "watcher with id " + req.watcher_id() + " not found"};
        }
        legacy_success(ctx.exchange);
        co_return Status{};
      });
}

}  // namespace cove::rpc
