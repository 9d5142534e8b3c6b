#include "runtime/container/criu.hpp"

#include <charconv>
#include <cstdio>

#include "runtime/container/mounts.hpp"

namespace cove::shim::container {

std::string criu_external_file_key(int mnt_id, uint64_t inode) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "file[%x:%llx]", static_cast<unsigned>(mnt_id), static_cast<unsigned long long>(inode));
  return buf;
}

int parse_fdinfo_mnt_id(std::string_view fdinfo) {
  constexpr std::string_view key = "mnt_id:";
  size_t at = 0;
  while ((at = fdinfo.find(key, at)) != std::string_view::npos) {
    if (at == 0 || fdinfo[at - 1] == '\n') {
      size_t i = at + key.size();
      while (i < fdinfo.size() && (fdinfo[i] == ' ' || fdinfo[i] == '\t')) ++i;
      int v = -1;
      auto [p, ec] = std::from_chars(fdinfo.data() + i, fdinfo.data() + fdinfo.size(), v);
      if (ec == std::errc() && p != fdinfo.data() + i) return v;
      return -1;
    }
    at += key.size();
  }
  return -1;
}

namespace {
void add_common(std::vector<std::string>& a) {
  // Cgroups: the restored tree inherits the groups CRIU runs in (the sandbox's).
  a.push_back("--manage-cgroups=ignore");
  // Connections between processes inside over loopback, and listeners, come back as they were.
  a.push_back("--tcp-established");
  a.push_back("--file-locks");
}
}  // namespace

std::vector<std::string> criu_dump_argv(const CriuDump& d) {
  std::vector<std::string> a = {d.criu, "dump", "--tree", std::to_string(d.pid), "--images-dir", d.images_dir,
                                "--log-file", d.log_file, "-v4"};
  add_common(a);
  if (!d.freeze_cgroup.empty()) a.insert(a.end(), {"--freeze-cgroup", d.freeze_cgroup});
  for (const char* node : kHostDeviceNodes) {
    a.insert(a.end(), {"--external", std::string("mnt[/dev/") + node + "]:dev_" + node});
  }
  if (!d.stdout_key.empty()) a.insert(a.end(), {"--external", d.stdout_key});
  if (d.leave_running) a.push_back("--leave-running");
  return a;
}

std::vector<std::string> criu_restore_argv(const CriuRestore& r) {
  std::vector<std::string> a = {r.criu, "restore", "--images-dir", r.images_dir, "--log-file", r.log_file, "-v4",
                                "--root", r.root, "--pidfile", r.pidfile,
                                // The restored init becomes the child of CRIU's parent (the
                                // shim), which reaps it as it reaps a booted one.
                                "--restore-sibling", "--restore-detached"};
  add_common(a);
  for (const char* node : kHostDeviceNodes) {
    a.insert(a.end(), {"--external", std::string("mnt[dev_") + node + "]:/dev/" + node});
  }
  if (r.stdout_fd >= 0 && !r.stdout_key.empty()) {
    a.insert(a.end(), {"--inherit-fd", "fd[" + std::to_string(r.stdout_fd) + "]:" + r.stdout_key});
  }
  return a;
}

namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// Drops "(criu/x.c:123): " and every word that looks like a path.
std::string scrub(std::string_view line) {
  size_t close = line.find("): ");
  if (line.substr(0, 7) == "Error (" && close != std::string_view::npos) line.remove_prefix(close + 3);
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    size_t end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    std::string_view word = line.substr(i, end - i);
    bool path = contains(word, "/") && !contains(word, "[");
    if (!out.empty()) out += ' ';
    out += path ? std::string("<path>") : std::string(word);
    i = end + 1;
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

std::string criu_failure_reason(std::string_view log) {
  std::vector<std::string_view> errors;
  size_t i = 0;
  while (i < log.size()) {
    size_t end = log.find('\n', i);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(i, end - i);
    i = end + 1;
    // "(00.123456) Error (criu/x.c:1): …" or with a pid column: keep from "Error (".
    size_t at = line.find("Error (");
    if (at == std::string_view::npos) continue;
    line.remove_prefix(at);
    if (contains(line, "RLIMIT_NOFILE") || contains(line, "cgroupd")) continue;  // harmless, every run
    errors.push_back(line);
  }
  for (std::string_view e : errors) {
    if (contains(e, "io_uring")) return "a process uses io_uring, which cannot be checkpointed";
    if (contains(e, "sk-unix") && contains(e, "not found")) {
      return std::string(kOutsideConnectionReason);
    }
    if (contains(e, "Can't lookup mount") || contains(e, "proper root mount")) {
      return "a process holds a file from outside the sandbox's filesystem";
    }
    if (contains(e, "inotify") || contains(e, "fanotify")) return "a filesystem watch (inotify) cannot be checkpointed";
    if (contains(e, "pidfd")) return "a process holds a pidfd, which cannot be checkpointed";
    if (contains(e, "Can't fork for")) return "the sandbox's process ids are still in use";
  }
  if (errors.empty()) return "checkpoint/restore failed (no reason given)";
  return scrub(errors.front());
}

}  // namespace cove::shim::container
