# shellcheck shell=bash disable=SC2154  # cove, config, state, bridge: the caller's globals
# Shared by the bench scripts that start a shim of their own (sourced; `log` is the caller's).

# What the shim did not destroy (it removes a sandbox's directory when it does): the sandbox's
# processes are killed through its cgroups, which are then removed. Status 1 if there was any.
kill_undestroyed_sandboxes() {
  local state=$1 dir id cg found=0
  for dir in "$state"/sandboxes/*/; do
    [[ -d $dir ]] || continue
    id=$(basename "$dir")
    log "sandbox $id was not destroyed by the shim; killing its cgroup"
    found=1
    for cg in /sys/fs/cgroup/*/cove/"$id" /sys/fs/cgroup/cove/"$id"; do
      [[ -f $cg/cgroup.procs ]] && xargs -r kill -KILL <"$cg/cgroup.procs" 2>/dev/null
    done
    sleep 1
    for cg in /sys/fs/cgroup/*/cove/"$id" /sys/fs/cgroup/cove/"$id"; do
      [[ -d $cg ]] && rmdir "$cg" 2>/dev/null
    done
  done
  return "$found"
}

# The shim's liveness by pid and start time (a reused pid is not our shim). Callers set cove,
# config, state, shim_pid and shim_start_time.
start_time_of() {
  local stat f
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
  stat=${stat##*) }
  read -ra f <<<"$stat"
  [[ ${f[0]} != Z ]] && echo "${f[19]}"
  return 0
}
shim_alive() { [[ -n $shim_pid && $(start_time_of "$shim_pid") == "$shim_start_time" ]]; }
live_sandboxes() { "$cove" sandbox list --config "$config" 2>>"$state/cli.log" | awk 'NR > 1 { print $1 }'; }

# A key for team bench, printed once.
new_bench_key() {
  local key
  key=$("$cove" key create --team bench --config "$config" 2>>"$state/cli.log") ||
    die "cove key create failed: $(tail -n 3 "$state/cli.log")"
  [[ $key =~ ^[[:graph:]]+$ ]] || die "cove key create printed no single-line key"
  printf '%s' "$key"
}

# `cove serve` in its own session (so a Ctrl-C of the script reaches the shim only through the
# cleanup, after the kills); returns once it printed "cove: ready" (≤ 30 s).
start_bench_shim() {
  local deadline
  setsid "$cove" serve --config "$config" </dev/null >>"$state/shim.log" 2>&1 &
  shim_pid=$!
  shim_start_time=$(start_time_of "$shim_pid")
  deadline=$((SECONDS + 30))
  until grep -q '^cove: ready$' "$state/shim.log"; do
    shim_alive || { tail -n 20 "$state/shim.log" >&2; die "cove serve exited before it was ready"; }
    ((SECONDS < deadline)) || die "cove serve printed no 'cove: ready' within 30 s"
    sleep 0.1
  done
}

# The run's state dir goes unless something is still mounted under it (then it stays, named in
# the caller's `left` array of what could not be removed).
remove_state_dir() {
  if findmnt -rn -o TARGET | grep -q "^$state/"; then
    left+=("mounts under $state (left in place)")
  else
    rm -rf --one-file-system "$state" || left+=("state dir $state")
  fi
}

# Says what the caller's `left` array holds; status 1 if anything. $1: the all-clear line.
report_leftovers() {
  if ((${#left[@]})); then
    log "left behind (removed where possible):"
    printf '  %s\n' "${left[@]}" >&2
    return 1
  fi
  log "$1"
}

# Refuse rather than disturb: the ports must be free, our bridge and its chain must not exist
# (another bench run is active, or one left them), and no other `cove serve` may run (its load
# would distort the figures). Callers set bridge.
refuse_if_busy() {
  local port
  for port in "$@"; do
    [[ -z $(ss -Hltn "sport = :$port") ]] || die "something already listens on port $port"
  done
  ! ip link show "$bridge" >/dev/null 2>&1 || die "interface $bridge exists: another bench run is active, or one left it"
  ! iptables -w -S "COVE-FWD-$bridge" >/dev/null 2>&1 ||
    die "chain COVE-FWD-$bridge exists: another bench run is active, or one left it"
  local others
  others=$(pgrep -x cove -a 2>/dev/null | grep -E '^[0-9]+ [^ ]*cove serve' || true)
  [[ -z $others ]] || die "another cove serve is running (an e2e run?); try again when it is done: ${others%%$'\n'*}"
}
