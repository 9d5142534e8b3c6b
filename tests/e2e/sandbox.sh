#!/usr/bin/env bash
# Throwaway sandbox for end-to-end tests of the guest agent.
#
#   sandbox.sh up <rootfs-dir> <agent-binary> <state-dir> [agent flags...]
#   sandbox.sh down <state-dir>
#
# Env: COVE_SANDBOX_SMALL_TMPFS  size of a small tmpfs (mode 1777) mounted at /mnt/small inside
#      the sandbox, for out-of-space tests (default 2m; 0 or empty: none).
#
# `up` runs the agent as PID 1 of new mount + pid namespaces, on an overlay of
# the rootfs, sharing the host's network namespace (so the agent's port is
# reachable on the host's loopback). It returns once the process is started;
# the caller waits for the agent itself. Files in <state-dir>:
#   pid        host pid of the sandbox's PID 1
#   agent.log  the agent's stdout and stderr (and setup errors)
#   upper/     overlay upper layer: everything the sandbox wrote
#   merged/    the sandbox's root as seen from the host
#   work/, .pid-start  overlay workdir; start time that guards `down` against
#              a reused pid
# If the state dir's filesystem cannot hold an overlay upper layer, a tmpfs
# is mounted on it first. `down` kills the sandbox, unmounts and removes it.
set -euo pipefail

log() { printf 'sandbox: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() {
  die "usage: $0 up <rootfs-dir> <agent-binary> <state-dir> [agent flags...]
       $0 down <state-dir>"
}

# Overlay options and /proc/self/mountinfo both need plain path characters.
check_path() {
  [[ $1 =~ ^[A-Za-z0-9._/+-]+$ ]] || die "unsupported characters in path: $1"
}

# Start time (clock ticks since boot) of a pid, empty if it is gone. With
# the pid it identifies the process, so a reused pid is never killed.
start_time() {
  local stat f
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
  stat=${stat##*) }                 # comm may contain spaces; skip past it
  read -ra f <<<"$stat"
  echo "${f[19]}"                   # field 22 of stat
}

# State letter of a pid (R, S, Z...), "X" if it is gone.
proc_state() {
  local stat
  read -r stat 2>/dev/null <"/proc/$1/stat" || { echo X; return 0; }
  stat=${stat##*) }
  echo "${stat%% *}"
}

# Runs as PID 1 inside the new namespaces, with the host's root still visible.
# $1 = merged dir; the rest are the agent's flags.
# shellcheck disable=SC2016  # expanded by the inner shell
readonly INIT='
set -euo pipefail
cd "$1"; small=$2; shift 2
mount -t proc -o nosuid,nodev,noexec proc proc
mount -t tmpfs -o nosuid,mode=0755,size=64k tmpfs dev
for d in null zero full random urandom tty; do
  : >"dev/$d"; mount --bind "/dev/$d" "dev/$d"
done
mkdir dev/pts dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5,nosuid,noexec devpts dev/pts
ln -s pts/ptmx dev/ptmx
ln -s /proc/self/fd dev/fd
ln -s /proc/self/fd/0 dev/stdin
ln -s /proc/self/fd/1 dev/stdout
ln -s /proc/self/fd/2 dev/stderr
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs dev/shm
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs tmp
mount --bind -o ro /sys sys
if [[ -n $small && $small != 0 ]]; then
  mkdir -p mnt/small
  mount -t tmpfs -o "nosuid,nodev,mode=1777,size=$small" tmpfs mnt/small
fi
# Stack the old root on top of the new one, then detach it: no temp dir needed.
pivot_root . .
umount -l .
cd /
# setsid: own session, so the sandbox does not share the session of a host
# process (which also matters for CRIU). env -i: no host environment leaks in.
exec setsid env -i HOME=/root \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /usr/local/bin/cove-agent "$@"
'

up() {
  (($# >= 3)) || usage
  local rootfs agent state
  rootfs=$(realpath -e "$1") || die "no rootfs: $1"
  agent=$(realpath -e "$2") || die "no agent binary: $2"
  [[ -d $rootfs && -f $agent ]] || usage
  mkdir -p "$3"
  state=$(realpath "$3")
  shift 3
  check_path "$rootfs"; check_path "$state"
  local small=${COVE_SANDBOX_SMALL_TMPFS-2m}
  [[ -z $small || $small =~ ^[0-9]+[kmg]?$ ]] || die "COVE_SANDBOX_SMALL_TMPFS: not a tmpfs size: $small"
  [[ -z $(ls -A "$state") ]] || die "state dir is not empty: $state"

  prepare() {
    # Upper dirs win over the lower ones' attributes: keep them 0755 root.
    install -d -m 0755 -o root -g root "$state/work" "$state/merged" \
      "$state"/upper{,/usr,/usr/local,/usr/local/bin}
    install -m 0755 -o root -g root "$agent" "$state/upper/usr/local/bin/cove-agent"
  }
  overlay() {
    mount -t overlay overlay \
      -o "lowerdir=$rootfs,upperdir=$state/upper,workdir=$state/work" \
      "$state/merged"
  }
  prepare
  if ! overlay 2>/dev/null; then
    # e.g. state dir on overlayfs/NFS: those cannot hold an upper layer.
    log "overlay upper not supported on $(stat -f -c %T "$state"), using a tmpfs"
    mount -t tmpfs -o mode=0755 cove-sandbox "$state"
    prepare
    overlay
  fi

  # Subshell: drop inherited fds (a caller's pipe held open by the sandbox
  # would make the caller hang), then become unshare; --kill-child ties the
  # sandbox to unshare in case someone kills unshare instead of PID 1.
  (
    for fd in /proc/"$BASHPID"/fd/*; do
      fd=${fd##*/}
      if ((fd > 2)); then eval "exec $fd>&-"; fi
    done
    exec unshare --mount --pid --fork --kill-child --propagation private \
      bash -c "$INIT" cove-init "$state/merged" "$small" "$@"
  ) </dev/null >"$state/agent.log" 2>&1 &
  local upid=$! pid=
  # unshare forks PID 1 right away; find it through unshare's child list.
  for _ in {1..500}; do
    read -r pid _ 2>/dev/null <"/proc/$upid/task/$upid/children" || true
    [[ -n $pid ]] && break
    kill -0 "$upid" 2>/dev/null || break
    sleep 0.01
  done
  if [[ -z $pid ]]; then
    kill -KILL "$upid" 2>/dev/null || true
    cat "$state/agent.log" >&2
    die "sandbox did not start"
  fi
  start_time "$pid" >"$state/.pid-start"
  echo "$pid" >"$state/pid"

  # Until pivot_root, PID 1 still sees the host's root (nsenter would land on
  # the host's files), so wait until its root is the overlay; this also turns
  # setup errors into a failed `up`.
  for _ in {1..500}; do
    [[ /proc/$pid/root -ef $state/merged ]] && return 0
    [[ $(proc_state "$pid") == [ZX]* ]] && break
    sleep 0.01
  done
  kill -KILL "$pid" 2>/dev/null || true
  cat "$state/agent.log" >&2
  die "sandbox setup failed (run 'down' to clean up)"
}

down() {
  (($# == 1)) || usage
  [[ -d $1 ]] || return 0           # already down
  local state pid=
  state=$(realpath "$1")
  check_path "$state"
  # It gets rm -rf'd: refuse anything that `up` would not have created.
  local entry
  for entry in "$state"/* "$state"/.[!.]*; do
    case ${entry##*/} in
      '*' | '.[!.]*' | pid | .pid-start | agent.log | upper | work | merged) ;;
      *) die "not a sandbox state dir (has ${entry##*/}): $state" ;;
    esac
  done

  [[ -f $state/pid ]] && pid=$(<"$state/pid")
  if [[ $pid =~ ^[0-9]+$ && -f $state/.pid-start &&
        $(start_time "$pid") == "$(<"$state/.pid-start")" ]]; then
    # Killing PID 1 of a pid namespace kills everything in it.
    kill -KILL "$pid" 2>/dev/null || true
    # Gone, or a zombie (all of the namespace is dead; its parent reaps it).
    for _ in {1..200}; do
      [[ $(proc_state "$pid") == [ZX]* ]] && break
      sleep 0.05
    done
    [[ $(proc_state "$pid") == [ZX]* ]] || die "pid $pid did not exit"
  fi

  # Children sort after their parents, so unmount in reverse order.
  local mnt
  while read -r mnt; do
    umount -l "$mnt" 2>/dev/null || true  # may already be gone with its parent
  done < <(awk -v s="$state" '$5 == s || index($5, s "/") == 1 { print $5 }' \
             /proc/self/mountinfo | LC_ALL=C sort -r)
  if awk -v s="$state" '$5 == s || index($5, s "/") == 1 { found = 1 }
                        END { exit !found }' /proc/self/mountinfo; then
    die "mounts remain under $state; not removing it"
  fi
  rm -rf --one-file-system "$state"
}

cmd=${1-}
shift || true
case $cmd in
  up) up "$@" ;;
  down) down "$@" ;;
  *) usage ;;
esac
