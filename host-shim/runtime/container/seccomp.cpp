// The sandbox's syscall filter: Docker's default seccomp profile for amd64 as a container without
// CAP_SYS_ADMIN gets it, plus the few deviations the agent needs (each marked below).
#include "runtime/container/seccomp.hpp"

#include <seccomp.h>
#include <sched.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace cove::shim::container {
namespace {

// Docker's unconditional allowlist (names for every architecture: the ones x86_64 does not have,
// such as chown32 or socketcall, resolve to nothing and are skipped). Left out on purpose,
// because the sandbox has no CAP_SYS_ADMIN and Docker only allows them with it:
// name_to_handle_at (Docker moved it behind CAP_DAC_READ_SEARCH with open_by_handle_at).
constexpr const char* kAllowed[] = {
    "accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat", "capget",
    "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime", "clock_adjtime64",
    "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64", "clock_nanosleep",
    "clock_nanosleep_time64", "close", "close_range", "connect", "copy_file_range", "creat", "dup",
    "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
    "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat",
    "exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate",
    "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchown32", "fchownat",
    "fcntl", "fcntl64", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr",
    "fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate",
    "ftruncate64", "futex", "futex_requeue", "futex_time64", "futex_wait", "futex_waitv",
    "futex_wake", "futimesat", "getcpu", "getcwd", "getdents", "getdents64", "getegid",
    "getegid32", "geteuid", "geteuid32", "getgid", "getgid32", "getgroups", "getgroups32",
    "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority",
    "getrandom", "getresgid", "getresgid32", "getresuid", "getresuid32", "getrlimit",
    "get_robust_list", "getrusage", "getsid", "getsockname", "getsockopt", "get_thread_area",
    "gettid", "gettimeofday", "getuid", "getuid32", "getxattr", "inotify_add_watch",
    "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl", "io_destroy",
    "io_getevents", "io_pgetevents", "io_pgetevents_time64", "ioprio_get", "ioprio_set",
    "io_setup", "io_submit", "ipc", "kill", "landlock_add_rule", "landlock_create_ruleset",
    "landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link", "linkat", "listen",
    "listxattr", "llistxattr", "_llseek", "lremovexattr", "lseek", "lsetxattr", "lstat", "lstat64",
    "madvise", "map_shadow_stack", "membarrier", "memfd_create", "memfd_secret", "mincore",
    "mkdir", "mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap", "mmap2",
    "mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
    "mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64", "mq_unlink", "mremap",
    "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
    "nanosleep", "newfstatat", "_newselect", "open", "openat", "openat2", "pause", "pidfd_open",
    "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect", "poll",
    "ppoll", "ppoll_time64", "prctl", "pread64", "preadv", "preadv2", "prlimit64",
    "process_mrelease", "pselect6", "pselect6_time64", "pwrite64", "pwritev", "pwritev2", "read",
    "readahead", "readlink", "readlinkat", "readv", "recv", "recvfrom", "recvmmsg",
    "recvmmsg_time64", "recvmsg", "remap_file_pages", "removexattr", "rename", "renameat",
    "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
    "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
    "rt_sigtimedwait_time64", "rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr",
    "sched_getparam", "sched_get_priority_max", "sched_get_priority_min", "sched_getscheduler",
    "sched_rr_get_interval", "sched_rr_get_interval_time64", "sched_setaffinity",
    "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
    "semctl", "semget", "semop", "semtimedop", "semtimedop_time64", "send", "sendfile",
    "sendfile64", "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsgid32", "setfsuid",
    "setfsuid32", "setgid", "setgid32", "setgroups", "setgroups32", "setitimer", "setpgid",
    "setpriority", "setregid", "setregid32", "setresgid", "setresgid32", "setresuid",
    "setresuid32", "setreuid", "setreuid32", "setrlimit", "set_robust_list", "setsid",
    "setsockopt", "set_thread_area", "set_tid_address", "setuid", "setuid32", "setxattr", "shmat",
    "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4", "sigprocmask",
    "sigreturn", "socketcall", "socketpair", "splice", "stat", "stat64", "statfs", "statfs64",
    "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee",
    "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
    "timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create", "timerfd_gettime",
    "timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate",
    "truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat", "utime", "utimensat",
    "utimensat_time64", "utimes", "vfork", "vmsplice", "wait4", "waitid", "waitpid", "write",
    "writev",
    // Docker: allowed on kernels >= 4.8, where ptrace can no longer bypass seccomp.
    "process_vm_readv", "process_vm_writev", "ptrace",
    // Docker: amd64-only entries.
    "arch_prctl", "modify_ldt",
    // Docker: allowed with CAP_SYS_CHROOT, which is in the default capability set.
    "chroot",
    // Deviation (a): the agent splices forwarded ports through io_uring. Docker dropped these in
    // 2023 because ring operations are not seen by seccomp; every operation a ring can perform is
    // one this allowlist permits anyway (capabilities still apply to ring operations).
    "io_uring_setup", "io_uring_enter", "io_uring_register",
};

// Newer x86_64 syscalls Docker allows that libseccomp 2.5.4 (Debian 12) cannot name yet; added
// by number so a newer libc in a template finds them (glibc falls back only on ENOSYS).
struct NumberedSyscall {
  const char* name;
  int number;
};
constexpr NumberedSyscall kAllowedByNumber[] = {
    {"uretprobe", 335},  // only callable from the kernel's uretprobe trampoline; denying it kills
                         // any process a host-side uretprobe is attached to
    {"cachestat", 451},     {"fchmodat2", 452}, {"map_shadow_stack", 453},
    {"futex_wake", 454},    {"futex_wait", 455}, {"futex_requeue", 456},
};
// Syscalls newer than everything this file knows answer ENOSYS instead of EPERM (as runc does
// for syscalls newer than its profile), so libc's "not implemented → fall back" paths work.
constexpr int kFirstUnknownSyscall = 457;
constexpr int kLastX86_64Syscall = 511;  // 512+ is the x32 range, refused as a foreign ABI

// Deviation (b): clone may not create namespaces (Docker's rule without CAP_SYS_ADMIN, with
// CLONE_NEWTIME added; its bit is the exit-signal byte for clone, where no valid signal sets it).
constexpr uint64_t kNamespaceFlags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                     CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP | CLONE_NEWTIME;

// Docker allows personality only with these values (Linux, PER_LINUX32, UNAME26, and the query).
constexpr uint64_t kSafePersonalities[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

constexpr int kAfVsock = 40;

struct FilterDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Filter = std::unique_ptr<void, FilterDeleter>;

void check(int rc, const std::string& what) {
  // libseccomp returns -errno.
  if (rc < 0) throw std::runtime_error("seccomp: " + what + ": " + std::strerror(-rc));
}

int resolve(const char* name) { return seccomp_syscall_resolve_name(name); }

}  // namespace

void load_sandbox_seccomp_filter() {
  // Default: EPERM for everything not listed (Docker's defaultAction + defaultErrnoRet 1).
  Filter filter(seccomp_init(SCMP_ACT_ERRNO(EPERM)));
  if (!filter) throw std::runtime_error("seccomp: cannot create the filter context");
  void* ctx = filter.get();

  // No no_new_privs: sudo (setuid) must keep working; the caller's CAP_SYS_ADMIN in its user
  // namespace is what lets the kernel accept the filter without it.
  check(seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0), "clear the no_new_privs attribute");
  // The kernel's own errno from seccomp_load (libseccomp reports ECANCELED otherwise).
  check(seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1), "ask for raw error codes");
  // Only the native ABI is allowed; i386 (int 0x80) and x32 calls fail like unknown syscalls
  // instead of killing the process.
  check(seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS)),
        "set the foreign-architecture action");

  for (const char* name : kAllowed) {
    int nr = resolve(name);
    // Unknown names and other architectures' syscalls (negative pseudo numbers) are skipped.
    if (nr == __NR_SCMP_ERROR || nr < 0) continue;
    check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0), std::string("allow ") + name);
  }
  for (const auto& syscall : kAllowedByNumber) {
    if (resolve(syscall.name) >= 0) continue;  // a newer libseccomp already added it by name
    check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, syscall.number, 0),
          std::string("allow ") + syscall.name);
  }
  for (int nr = kFirstUnknownSyscall; nr <= kLastX86_64Syscall; ++nr) {
    check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0), "answer ENOSYS for new syscalls");
  }

  // Docker: socket for every family but AF_VSOCK.
  check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, resolve("socket"), 1,
                         SCMP_A0(SCMP_CMP_NE, kAfVsock)),
        "allow socket");

  // Deviation (b), see kNamespaceFlags.
  check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, resolve("clone"), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, kNamespaceFlags, 0)),
        "allow clone without namespace flags");
  // Deviation (c): clone3 passes its flags in memory a filter cannot read; ENOSYS makes glibc
  // fall back to clone, whose flags the rule above checks (Docker does the same).
  check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), resolve("clone3"), 0), "refuse clone3");

  for (uint64_t persona : kSafePersonalities) {
    check(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, resolve("personality"), 1,
                           SCMP_A0(SCMP_CMP_EQ, persona)),
          "allow personality");
  }

  // Deviation (d) is an absence: the rules Docker adds only for capabilities the sandbox does not
  // have (mount, umount2, unshare, setns, pivot_root, bpf, perf_event_open, keyctl, add_key,
  // request_key, kexec_*, *_module, open_by_handle_at, name_to_handle_at, reboot, swapon/off,
  // quotactl, syslog, acct, settimeofday, clock_settime, userfaultfd, the new mount API, ...) are
  // not added, so the default EPERM answers them.

  if (int rc = seccomp_load(ctx); rc == -EACCES) {
    // Without no_new_privs the kernel wants CAP_SYS_ADMIN (in our user namespace).
    throw std::runtime_error(
        "seccomp: loading the filter needs CAP_SYS_ADMIN; load it before "
        "restrict_to_default_capabilities()");
  } else {
    check(rc, "load the filter");
  }
}

}  // namespace cove::shim::container
