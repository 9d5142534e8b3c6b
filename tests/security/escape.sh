#!/usr/bin/env bash
# Sandbox escape attempts. Runs as root INSIDE a sandbox (the e2e suite sends it through the E2B
# SDK). Every attempt must fail for the sandbox to be sound; one line per attempt:
#   ok <name>                      the attempt was refused
#   not ok <name>: <what happened> it got through (or the check could not be made)
# Exit status: 0 if every attempt was refused, 1 otherwise.
#
# Environment:
#   COVE_SHIM_ADDR           host:port of shim listeners as seen from the sandbox; several may be
#                            given separated by spaces or commas (e.g. "10.88.0.1:3000 192.0.2.10:3000")
#   COVE_OTHER_SANDBOX_ADDR  address of another sandbox, host or host:port (default port 49983)
#
# Attempts that would change state if they succeeded write back the value they read, so even an
# escaped run leaves the host as it was (sysrq is only opened, never written).
set -u
export LC_ALL=C

failures=0
pass() { printf 'ok %s\n' "$1"; }
fail() {
  # Keep the report on one line.
  printf 'not ok %s: %s\n' "$1" "$(printf '%s' "$2" | tr '\n' ' ' | cut -c1-300)"
  failures=$((failures + 1))
}

PY=$(command -v python3 || true)
scratch=$(mktemp -d /tmp/cove-escape.XXXXXX 2>/dev/null || echo /tmp/cove-escape.$$)
mkdir -p "$scratch"
cleanup() {
  # Anything an escaped attempt mounted comes off again before the directory goes.
  for m in "$scratch"/m*; do
    [ -d "$m" ] && umount -l "$m" 2>/dev/null
  done
  rm -rf "$scratch" 2>/dev/null
}
trap cleanup EXIT

# Runs a small python3 program; prints its output. Python reports syscall results as
#   "refused <errno name>" or "succeeded <detail>".
py() {
  if [ -z "$PY" ]; then
    echo "python3 missing"
    return 2
  fi
  "$PY" -c "$1" "${@:2}" 2>&1
}

PY_PRELUDE='
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *args)
    return r, ctypes.get_errno()
def result(r, e, detail=""):
    if r < 0:
        print("refused", errno.errorcode.get(e, str(e)))
    else:
        print("succeeded", detail or r)
'

# expect_refused NAME OUTPUT: OUTPUT from py() must start with "refused".
expect_refused() {
  case "$2" in
    refused*) pass "$1" ;;
    *) fail "$1" "$2" ;;
  esac
}
# expect_denied NAME OUTPUT: a privileged syscall must be refused by a permission check (the
# seccomp filter's EPERM, or EACCES/ENOSYS); any other errno means the permission check passed
# and only the bogus arguments stopped the call.
expect_denied() {
  case "$2" in
    "refused EPERM"*|"refused EACCES"*|"refused ENOSYS"*) pass "$1" ;;
    refused*) fail "$1" "passed the permission check: $2" ;;
    *) fail "$1" "$2" ;;
  esac
}

# --- mounts ------------------------------------------------------------------------------------
try_mount() {
  local name=$1 dir=$scratch/m$2
  shift 2
  mkdir -p "$dir"
  if mount "$@" "$dir" >/dev/null 2>&1; then
    umount -l "$dir" 2>/dev/null
    fail "$name" "mount $* succeeded"
  else
    pass "$name"
  fi
}
if command -v mount >/dev/null 2>&1; then
  try_mount mount-tmpfs 1 -t tmpfs none
  try_mount mount-proc 2 -t proc proc
  try_mount mount-bind 3 --bind /
  try_mount mount-sysfs 4 -t sysfs sysfs
else
  pass "mount-tool-absent"
fi
mkdir -p "$scratch/m5"
# The syscall too, in case the mount binary is missing or behaves differently.
expect_denied mount-syscall "$(py "$PY_PRELUDE
r = libc.mount(b'none', sys.argv[1].encode(), b'tmpfs', 0, None)
e = ctypes.get_errno()
if r == 0: libc.umount2(sys.argv[1].encode(), 2)
result(r, e)" "$scratch/m5")"
expect_denied remount-proc-sys-rw "$(py "$PY_PRELUDE
MS_REMOUNT = 32; MS_BIND = 4096
r = libc.mount(None, b'/proc/sys', None, MS_REMOUNT | MS_BIND, None)
result(r, ctypes.get_errno())")"

# --- namespaces ----------------------------------------------------------------------------------
for flag in U m n p i u C; do
  if command -v unshare >/dev/null 2>&1; then
    if unshare -"$flag" true >/dev/null 2>&1; then
      fail "unshare-$flag" "unshare -$flag succeeded"
    else
      pass "unshare-$flag"
    fi
  fi
done
expect_denied unshare-syscall-user "$(py "$PY_PRELUDE
r = libc.unshare(0x10000000)
result(r, ctypes.get_errno())")"
# Refused either at open (EACCES: no ptrace access to PID 1) or at setns (EPERM).
expect_denied setns-pid1-mnt "$(py "$PY_PRELUDE
try:
    fd = os.open('/proc/1/ns/mnt', os.O_RDONLY)
except OSError as e:
    result(-1, e.errno)
else:
    r = libc.setns(fd, 0)
    result(r, ctypes.get_errno())")"
# clone(CLONE_NEWUSER|SIGCHLD) via the raw syscall (56 on x86_64).
expect_denied clone-newuser "$(py "$PY_PRELUDE
r, e = sc(56, ctypes.c_ulong(0x10000000 | 17), None, None, None, None)
if r == 0: os._exit(0)
if r > 0: os.waitpid(r, 0)
result(r, e)")"
# Unprivileged path: a normal user must not get a user namespace either.
if id user >/dev/null 2>&1 && command -v unshare >/dev/null 2>&1 && command -v su >/dev/null 2>&1; then
  if su -s /bin/sh user -c 'unshare -U -r true' >/dev/null 2>&1; then
    fail unshare-user-as-user "a normal user created a user namespace"
  else
    pass unshare-user-as-user
  fi
fi

# --- own privileges -------------------------------------------------------------------------------
# Docker's default set and nothing more (no CAP_SYS_ADMIN, bit 21), and a seccomp filter.
bounding=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
if [ $(( 16#${bounding:-ffffffffffffffff} & ~16#a80425fb )) -eq 0 ]; then
  pass capability-bounding-set
else
  fail capability-bounding-set "CapBnd is $bounding (Docker's default is 00000000a80425fb)"
fi
if grep -q '^Seccomp:[[:space:]]*2' /proc/self/status; then
  pass seccomp-filter-active
else
  fail seccomp-filter-active "$(grep '^Seccomp' /proc/self/status)"
fi

# --- processes -----------------------------------------------------------------------------------
pid1=$(cat /proc/1/comm 2>/dev/null)
if [ "$pid1" = "cove-agent" ]; then
  pass pid1-is-agent
else
  fail pid1-is-agent "pid 1 is '$pid1'"
fi
# In a private pid namespace only its init has parent 0; on the host, kthreadd (2) has too.
outsiders=""
for status in /proc/[0-9]*/status; do
  pid=${status#/proc/}; pid=${pid%/status}
  ppid=$(awk '/^PPid:/ {print $2}' "$status" 2>/dev/null)
  [ -z "$ppid" ] && continue
  if [ "$ppid" = 0 ] && [ "$pid" != 1 ]; then
    outsiders="$outsiders $pid($(cat "/proc/$pid/comm" 2>/dev/null))"
  fi
done
if [ -z "$outsiders" ]; then pass host-processes-invisible; else fail host-processes-invisible "visible:$outsiders"; fi
if [ -e /proc/2/comm ] && [ "$(cat /proc/2/comm 2>/dev/null)" = kthreadd ]; then
  fail kthreadd-invisible "the host's kthreadd is visible"
else
  pass kthreadd-invisible
fi

# --- sysctls, sysrq, /sys ------------------------------------------------------------------------
# write_back NAME PATH: re-writes the current value; any success means the file is writable.
write_back() {
  expect_refused "$1" "$(py "$PY_PRELUDE
p = sys.argv[1]
try:
    with open(p, 'rb') as f: old = f.read()
except OSError as e:
    print('refused', errno.errorcode.get(e.errno, e.errno), '(unreadable)'); sys.exit()
try:
    fd = os.open(p, os.O_WRONLY)
except OSError as e:
    print('refused', errno.errorcode.get(e.errno, e.errno)); sys.exit()
st = os.fstat(fd)
if (st.st_mode & 0o170000) == 0o020000 and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3:
    print('refused masked-by-dev-null'); sys.exit()
try:
    os.write(fd, old)
    print('succeeded wrote', p)
except OSError as e:
    print('refused', errno.errorcode.get(e.errno, e.errno))" "$2")"
}
write_back sysctl-hostname /proc/sys/kernel/hostname
write_back sysctl-domainname /proc/sys/kernel/domainname
write_back sysctl-core-pattern /proc/sys/kernel/core_pattern
write_back sysctl-modprobe /proc/sys/kernel/modprobe
write_back sysctl-panic /proc/sys/kernel/panic
write_back sysctl-vm-overcommit /proc/sys/vm/overcommit_memory
write_back sysctl-fs-file-max /proc/sys/fs/file-max
write_back sys-thp /sys/kernel/mm/transparent_hugepage/enabled
write_back sys-uevent-helper /sys/kernel/uevent_helper
# sysrq: opening it for writing is the escape (never write a key).
expect_refused sysrq-trigger "$(py "$PY_PRELUDE
try:
    fd = os.open('/proc/sysrq-trigger', os.O_WRONLY)
except OSError as e:
    print('refused', errno.errorcode.get(e.errno, e.errno)); sys.exit()
st = os.fstat(fd)
if (st.st_mode & 0o170000) == 0o020000 and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3:
    print('refused masked-by-dev-null')
else:
    print('succeeded opened /proc/sysrq-trigger for writing')")"
if mkdir /sys/fs/cgroup/cove-escape-test 2>/dev/null; then
  rmdir /sys/fs/cgroup/cove-escape-test 2>/dev/null
  fail cgroup-mkdir "created a cgroup directory under /sys/fs/cgroup"
else
  pass cgroup-mkdir
fi
for dir in /sys/fs/cgroup/memory /sys/fs/cgroup/unified /sys/fs/cgroup/pids; do
  [ -d "$dir" ] || continue
  if mkdir "$dir/cove-escape-test" 2>/dev/null; then
    rmdir "$dir/cove-escape-test" 2>/dev/null
    fail "cgroup-mkdir-$(basename "$dir")" "created a cgroup under $dir"
  else
    pass "cgroup-mkdir-$(basename "$dir")"
  fi
done
if touch /sys/cove-escape-test 2>/dev/null; then
  rm -f /sys/cove-escape-test
  fail sys-write "created a file under /sys"
else
  pass sys-write
fi

# --- memory limit ---------------------------------------------------------------------------------
# Our own cgroup's limit (v2 and v1 spellings) and any other visible one, written back unchanged.
declare -A limit_files=()
while IFS=: read -r _ controllers path; do
  case "$controllers" in
    "") candidates="/sys/fs/cgroup$path/memory.max /sys/fs/cgroup/unified$path/memory.max" ;;
    *memory*) candidates="/sys/fs/cgroup/memory$path/memory.limit_in_bytes" ;;
    *) continue ;;
  esac
  for f in $candidates; do
    f=${f//\/\//\/}  # the root cgroup's path "/" doubles a slash
    [ -e "$f" ] && limit_files["$f"]=1
  done
done </proc/self/cgroup
while IFS= read -r f; do
  limit_files["$f"]=1
done < <(find /sys/fs/cgroup -maxdepth 4 \( -name memory.max -o -name memory.limit_in_bytes -o -name memory.memsw.limit_in_bytes \) 2>/dev/null | head -20)
if [ "${#limit_files[@]}" -eq 0 ]; then
  pass memory-limit-invisible
else
  for f in "${!limit_files[@]}"; do write_back "memory-limit:$f" "$f"; done
fi
expect_refused setrlimit-raise-hard "$(py "$PY_PRELUDE
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard + 1 if hard != resource.RLIM_INFINITY else hard))
    print('refused unlimited-already' if hard == resource.RLIM_INFINITY else 'succeeded raised the hard limit')
except (ValueError, OSError) as e:
    print('refused', e)")"

# --- kernel modules and the kernel --------------------------------------------------------------
if command -v insmod >/dev/null 2>&1; then
  printf 'not a module' >"$scratch/fake.ko"
  if out=$(insmod "$scratch/fake.ko" 2>&1); then
    fail insmod "insmod succeeded"
  else
    case "$out" in
      *"Operation not permitted"*|*"Function not implemented"*) pass insmod ;;
      *) fail insmod "refused for another reason than permission: $out" ;;
    esac
  fi
fi
# init_module 175, finit_module 313, delete_module 176, kexec_load 246 (x86_64).
expect_denied init-module "$(py "$PY_PRELUDE
buf = ctypes.create_string_buffer(b'\x7fELF' + b'\0' * 60)
r, e = sc(175, buf, ctypes.c_ulong(64), b'')
result(r, e)")"
expect_denied finit-module "$(py "$PY_PRELUDE
fd = os.open('/dev/null', os.O_RDONLY)
r, e = sc(313, fd, b'', 0)
result(r, e)")"
expect_denied delete-module "$(py "$PY_PRELUDE
r, e = sc(176, b'cove_nonexistent', ctypes.c_uint(0o4000))
result(r, e)")"
expect_denied kexec-load "$(py "$PY_PRELUDE
# Invalid flags: even a call that got through could only fail (EINVAL), never unload anything.
r, e = sc(246, ctypes.c_ulong(0), ctypes.c_ulong(0), None, ctypes.c_ulong(0xdead0000))
result(r, e)")"
# bpf(BPF_MAP_CREATE) 321, perf_event_open 298, keyctl 250, userfaultfd 323.
expect_denied bpf "$(py "$PY_PRELUDE
attr = ctypes.create_string_buffer(72)
ctypes.memmove(attr, (ctypes.c_uint * 4)(2, 4, 4, 1), 16)
r, e = sc(321, 0, attr, 72)
result(r, e)")"
expect_denied perf-event-open "$(py "$PY_PRELUDE
attr = ctypes.create_string_buffer(128)
ctypes.memmove(attr, (ctypes.c_uint * 2)(1, 128), 8)
r, e = sc(298, attr, -1, 0, -1, 0)
result(r, e)")"
expect_denied keyctl "$(py "$PY_PRELUDE
r, e = sc(250, 0, -4, 1)
result(r, e)")"
expect_denied userfaultfd "$(py "$PY_PRELUDE
r, e = sc(323, 0o2000000)
result(r, e)")"
# open_by_handle_at: the classic "shocker" escape, handle of the root inode of another fs.
expect_denied open-by-handle-at "$(py "$PY_PRELUDE
handle = ctypes.create_string_buffer(8 + 8)
ctypes.memmove(handle, (ctypes.c_uint * 2)(8, 1), 8)
ctypes.memmove(ctypes.byref(handle, 8), (ctypes.c_uint * 2)(2, 0), 8)
fd = os.open('/', os.O_RDONLY)
r, e = sc(304, fd, handle, 0)
result(r, e)")"
if command -v dmesg >/dev/null 2>&1; then
  if dmesg >/dev/null 2>&1; then fail kernel-log "dmesg read the kernel log"; else pass kernel-log; fi
fi

# --- devices -------------------------------------------------------------------------------------
# mknod may be allowed (CAP_MKNOD); reading through the node must not be.
for dev in "b 8 0" "b 253 0" "b 259 0" "b 7 0" "b 254 0" "c 1 1" "c 1 2"; do
  # shellcheck disable=SC2086  # split "type major minor" on purpose
  set -- $dev
  node="$scratch/dev-$1-$2-$3"
  if ! mknod "$node" "$1" "$2" "$3" 2>/dev/null; then
    pass "mknod-$1-$2:$3"
    continue
  fi
  if dd if="$node" of=/dev/null bs=512 count=1 2>/dev/null; then
    fail "mknod-$1-$2:$3" "created and read device $2:$3"
  else
    pass "mknod-$1-$2:$3"
  fi
  rm -f "$node"
done
for dev in /dev/mem /dev/kmem /dev/port /dev/kmsg /dev/sda /dev/vda /dev/nvme0n1; do
  [ -e "$dev" ] || continue
  if dd if="$dev" of=/dev/null bs=1 count=1 2>/dev/null; then
    fail "read-$dev" "read from $dev"
  else
    pass "read-$dev"
  fi
done

# --- host files ----------------------------------------------------------------------------------
# No mount may come from a host directory: a bind mount shows its host path as the mount's
# root (field 4) and a source path in the field after the filesystem type.
host_mounts=$(awk '{
  root = $4; sep = 0
  for (i = 7; i <= NF; i++) if ($i == "-") { sep = i; break }
  source = (sep > 0 && sep + 2 <= NF) ? $(sep + 2) : ""
  if (root ~ /^\/(var\/lib\/cove|var\/cache\/cove|work|root|home|srv|run\/cove)(\/|$)/ ||
      source ~ /^\/(var\/lib\/cove|var\/cache\/cove|work|root|home|srv|run\/cove)(\/|$)/)
    printf "%s<-%s:%s ", $5, source, root
}' /proc/self/mountinfo 2>/dev/null)
if [ -z "$host_mounts" ]; then pass mounts-without-host-paths; else fail mounts-without-host-paths "$host_mounts"; fi
for path in /work /var/lib/cove /var/cache/cove /etc/cove; do
  if [ -e "$path" ]; then fail "host-path-$path" "$path exists inside the sandbox"; else pass "host-path-$path"; fi
done
# chroot is allowed (CAP_SYS_CHROOT, as in Docker); the classic breakout must not lead anywhere
# but our own root (it would, if the launcher chrooted instead of pivot_root'ing).
expect_refused chroot-breakout "$(py "$PY_PRELUDE
st0 = os.stat('/')
d = sys.argv[1]
os.mkdir(d)
keep = os.open('/', os.O_RDONLY)
try:
    os.chroot(d)
except OSError as e:
    print('refused', errno.errorcode.get(e.errno, e.errno)); sys.exit()
os.fchdir(keep)
for _ in range(64): os.chdir('..')
os.chroot('.')
st1 = os.stat('/')
if (st1.st_dev, st1.st_ino) == (st0.st_dev, st0.st_ino):
    print('refused stayed-in-own-root')
else:
    print('succeeded reached another root; entries:', ' '.join(sorted(os.listdir('/'))[:12]))" "$scratch/chroot")"
if command -v findmnt >/dev/null 2>&1 && findmnt -n / >/dev/null 2>&1; then
  root_src=$(findmnt -n -o SOURCE / 2>/dev/null)
  case "$root_src" in
    /dev/*) fail root-is-not-a-host-disk "/ is mounted from $root_src" ;;
    *) pass root-is-not-a-host-disk ;;
  esac
fi

# --- hostname ------------------------------------------------------------------------------------
old_name=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)
expect_denied sethostname "$(py "$PY_PRELUDE
name = sys.argv[1].encode()
r = libc.sethostname(name, len(name))
result(r, ctypes.get_errno())" "$old_name")"
if command -v hostname >/dev/null 2>&1; then
  if hostname "cove-escape-$$" 2>/dev/null; then
    hostname "$old_name" 2>/dev/null
    fail hostname-tool "hostname changed"
  else
    pass hostname-tool
  fi
fi

# --- network -------------------------------------------------------------------------------------
# tcp_reachable HOST PORT: exit 0 if a TCP connection completes within 2 s.
tcp_reachable() {
  # shellcheck disable=SC2016  # expanded by the inner bash, from its own arguments
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}
split_addr() {  # "host:port" or "[v6]:port" or "host" → "host port"
  local addr=$1 default_port=$2 host port
  case "$addr" in
    \[*\]:*) host=${addr%%]:*}; host=${host#[}; port=${addr##*]:} ;;
    *:*:*) host=$addr; port=$default_port ;;  # bare IPv6
    *:*) host=${addr%:*}; port=${addr##*:} ;;
    *) host=$addr; port=$default_port ;;
  esac
  printf '%s %s\n' "$host" "$port"
}
if [ -n "${COVE_SHIM_ADDR:-}" ]; then
  for addr in ${COVE_SHIM_ADDR//,/ }; do
    read -r host port <<<"$(split_addr "$addr" 3000)"
    if tcp_reachable "$host" "$port"; then
      fail "reach-shim-$host:$port" "TCP connection to the shim succeeded"
    else
      pass "reach-shim-$host:$port"
    fi
  done
else
  fail reach-shim "COVE_SHIM_ADDR is not set, nothing was tried"
fi
if [ -n "${COVE_OTHER_SANDBOX_ADDR:-}" ]; then
  for addr in ${COVE_OTHER_SANDBOX_ADDR//,/ }; do
    read -r host port <<<"$(split_addr "$addr" 49983)"
    if tcp_reachable "$host" "$port"; then
      fail "reach-other-sandbox-$host:$port" "TCP connection to the other sandbox succeeded"
    else
      pass "reach-other-sandbox-$host:$port"
    fi
  done
else
  fail reach-other-sandbox "COVE_OTHER_SANDBOX_ADDR is not set, nothing was tried"
fi
# The gateway (the host's bridge address) answers nothing, on any port commonly used.
# /proc/net/route prints it as little-endian hex.
gw=""
while read -r iface dest gateway _; do
  [ "$iface" = Iface ] && continue
  if [ "$dest" = 00000000 ] && [ ${#gateway} -eq 8 ]; then
    gw="$((16#${gateway:6:2})).$((16#${gateway:4:2})).$((16#${gateway:2:2})).$((16#${gateway:0:2}))"
    break
  fi
done </proc/net/route
if [ -n "$gw" ]; then
  open_ports=""
  for port in 22 53 80 443 3000 3001 49983; do
    tcp_reachable "$gw" "$port" && open_ports="$open_ports $port"
  done
  if [ -z "$open_ports" ]; then pass "gateway-closed-$gw"; else fail "gateway-closed-$gw" "open ports:$open_ports"; fi
fi

echo "# $failures escape(s)"
[ "$failures" -eq 0 ]
