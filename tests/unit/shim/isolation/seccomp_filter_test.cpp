// The sandbox seccomp filter, loaded in forked children. Every refused call is first made in a
// child without the filter, to prove the probe does not fail with the same errno on its own.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "runtime/container/capabilities.hpp"
#include "runtime/container/seccomp.hpp"
#include "forked_child.hpp"

namespace {

using cove::shim::container::load_sandbox_seccomp_filter;
using cove::shim::container::restrict_to_default_capabilities;
using cove::test::report;
using cove::test::run_in_child;

// Every probe child gets a private mount namespace first, so a mount that the filter fails to
// stop lands there and not on the host.
void isolate_mounts() {
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    throw std::runtime_error(std::string("private mount namespace: ") + std::strerror(errno));
  }
}

// 0 if the call succeeded, else its errno; -1000 if the child itself failed.
int probe(bool filtered, long (*call)()) {
  auto outcome = run_in_child([&](int fd) {
    isolate_mounts();
    if (filtered) load_sandbox_seccomp_filter();
    errno = 0;
    long result = call();
    report(fd, std::to_string(result < 0 ? errno : 0));
  });
  if (outcome.exit_code != 0) {
    ADD_FAILURE() << "probe child failed: " << outcome.output;
    return -1000;
  }
  return std::atoi(outcome.output.c_str());
}

// A scratch directory for the whole suite (the probes are plain function pointers).
std::string g_scratch;
const std::string& scratch_dir() { return g_scratch; }

class SeccompFilter : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cove-seccomp-XXXXXX").string();
    g_scratch = mkdtemp(pattern.data()) ? pattern : "/nonexistent-cove-scratch";
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(g_scratch, ignored);
  }
};

long do_mount() { return mount("none", scratch_dir().c_str(), "tmpfs", 0, "size=1m"); }
long do_unshare_user() { return unshare(CLONE_NEWUSER); }
long do_unshare_mounts() { return unshare(CLONE_NEWNS); }
long do_clone_newns() {
  long pid = syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid == 0) _exit(0);  // the unfiltered control really gets a child
  if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return pid < 0 ? -1 : 0;
}
long do_clone_newuser() {
  long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return pid < 0 ? -1 : 0;
}
long do_init_module() { return syscall(SYS_init_module, nullptr, 0, ""); }
long do_finit_module() { return syscall(SYS_finit_module, -1, "", 0); }
// Invalid flags: without the filter this can only fail (EINVAL, or ENOSYS without kexec).
long do_kexec_load() { return syscall(SYS_kexec_load, 0, 0, nullptr, 0xdead0000UL); }
long do_bpf() { return syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, nullptr, 0); }
long do_setns() { return setns(-1, 0); }
long do_umount() { return umount2("/nonexistent-cove-path", 0); }
long do_pivot_root() { return syscall(SYS_pivot_root, "/nonexistent-a", "/nonexistent-b"); }
long do_keyctl() { return syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -1 /* thread */, 0); }
long do_userfaultfd() { return syscall(SYS_userfaultfd, O_CLOEXEC); }
long do_perf_event_open() { return syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0); }
long do_open_by_handle_at() { return syscall(SYS_open_by_handle_at, -1, nullptr, 0); }
long do_name_to_handle_at() { return syscall(SYS_name_to_handle_at, AT_FDCWD, "/", nullptr, nullptr, 0); }
long do_fsopen() { return syscall(SYS_fsopen, "tmpfs", 0); }
// Bad magic: the unfiltered control fails with EINVAL after the capability check.
long do_reboot() { return syscall(SYS_reboot, 0xfee1dead, 0, 0, nullptr); }
long do_swapon() { return syscall(SYS_swapon, nullptr, 0); }
long do_syslog() { return syscall(SYS_syslog, 10 /* SIZE_BUFFER: a read */, nullptr, 0); }
long do_clock_settime() { return syscall(SYS_clock_settime, 12345, nullptr); }
long do_personality_unsafe() { return personality(ADDR_NO_RANDOMIZE); }
long do_vsock() { return socket(40 /* AF_VSOCK */, SOCK_STREAM, 0); }
long do_clone3() { return syscall(SYS_clone3, nullptr, 0); }
long do_future_syscall() { return syscall(500); }

struct Refused {
  const char* name;
  long (*call)();
};

TEST_F(SeccompFilter, RefusesWithEpermWhatDockerDeniesWithoutCapSysAdmin) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  const Refused refused[] = {
      {"mount", do_mount},
      {"unshare(CLONE_NEWUSER)", do_unshare_user},
      {"unshare(CLONE_NEWNS)", do_unshare_mounts},
      {"clone(CLONE_NEWNS)", do_clone_newns},
      {"clone(CLONE_NEWUSER)", do_clone_newuser},
      {"init_module", do_init_module},
      {"finit_module", do_finit_module},
      {"kexec_load", do_kexec_load},
      {"bpf", do_bpf},
      {"setns", do_setns},
      {"umount2", do_umount},
      {"pivot_root", do_pivot_root},
      {"keyctl", do_keyctl},
      {"userfaultfd", do_userfaultfd},
      {"perf_event_open", do_perf_event_open},
      {"open_by_handle_at", do_open_by_handle_at},
      {"name_to_handle_at", do_name_to_handle_at},
      {"fsopen", do_fsopen},
      {"reboot", do_reboot},
      {"swapon", do_swapon},
      {"syslog", do_syslog},
      {"clock_settime", do_clock_settime},
      {"personality(ADDR_NO_RANDOMIZE)", do_personality_unsafe},
      {"socket(AF_VSOCK)", do_vsock},
  };
  for (const auto& r : refused) {
    int control = probe(false, r.call);
    EXPECT_NE(control, EPERM) << r.name << ": fails with EPERM even unfiltered, the probe proves nothing";
    EXPECT_EQ(probe(true, r.call), EPERM) << r.name;
  }
}

TEST_F(SeccompFilter, Clone3AnswersEnosysSoLibcFallsBackToClone) {
  int control = probe(false, do_clone3);
  EXPECT_NE(control, ENOSYS) << "this kernel has no clone3; the probe proves nothing";
  EXPECT_EQ(probe(true, do_clone3), ENOSYS);
}

TEST_F(SeccompFilter, SyscallsNewerThanTheProfileAnswerEnosysNotEperm) {
  EXPECT_EQ(probe(true, do_future_syscall), ENOSYS);
}

TEST_F(SeccompFilter, OrdinaryProgramsKeepWorking) {
  const std::string file = scratch_dir() + "/data";
  auto outcome = run_in_child([&](int fd) {
    load_sandbox_seccomp_filter();
    auto check = [&](bool ok, const std::string& what) {
      report(fd, what + (ok ? " ok\n" : std::string(" FAILED: ") + std::strerror(errno) + "\n"));
    };
    check(getpid() > 0, "getpid");
    int file_fd = open(file.c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
    check(file_fd >= 0, "open");
    check(write(file_fd, "hello", 5) == 5, "write");
    char buffer[8] = {};
    check(pread(file_fd, buffer, 5, 0) == 5 && std::string(buffer) == "hello", "read");
    close(file_fd);

    pid_t child = fork();
    if (child == 0) _exit(7);
    int status = 0;
    check(child > 0 && waitpid(child, &status, 0) == child && WEXITSTATUS(status) == 7, "fork");

    pid_t exec_child = fork();
    if (exec_child == 0) {
      execl("/bin/true", "true", nullptr);
      _exit(127);
    }
    status = -1;
    check(exec_child > 0 && waitpid(exec_child, &status, 0) == exec_child && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "exec /bin/true");

    // pthread_create tries clone3 first, gets ENOSYS, and falls back to clone.
    bool ran = false;
    std::thread([&] { ran = true; }).join();
    check(ran, "thread");

    io_uring_params params{};
    long ring = syscall(SYS_io_uring_setup, 4, &params);
    check(ring >= 0, "io_uring_setup");
    if (ring >= 0) close(static_cast<int>(ring));

    check(personality(0xffffffff) >= 0, "personality query");
    int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    check(tcp >= 0, "socket(AF_INET)");
    if (tcp >= 0) close(tcp);

    std::ifstream status_file("/proc/self/status");
    std::stringstream text;
    text << status_file.rdbuf();
    check(text.str().find("Seccomp:\t2") != std::string::npos, "seccomp mode 2");
    // Setuid programs (sudo) need no_new_privs off.
    check(text.str().find("NoNewPrivs:\t0") != std::string::npos, "no_new_privs off");
  });
  EXPECT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(outcome.output.find("FAILED"), std::string::npos) << outcome.output;
  // All 12 checks reported (a crash midway would leave fewer lines).
  EXPECT_EQ(std::count(outcome.output.begin(), outcome.output.end(), '\n'), 12) << outcome.output;
}

// Without no_new_privs the kernel needs CAP_SYS_ADMIN to accept a filter: loading it after the
// capability drop must say so, not fail obscurely.
TEST_F(SeccompFilter, LoadingAfterTheCapabilityDropExplainsTheOrder) {
  auto outcome = run_in_child([](int fd) {
    restrict_to_default_capabilities();
    load_sandbox_seccomp_filter();
    report(fd, "loaded");
  });
  EXPECT_EQ(outcome.exit_code, 101) << outcome.output;
  EXPECT_NE(outcome.output.find("before restrict_to_default_capabilities()"), std::string::npos)
      << outcome.output;
}

}  // namespace
