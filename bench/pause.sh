#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2016  # cleanup runs from the EXIT trap; node -e scripts are single-quoted
# Pause/resume benchmarks of the host shim (issue 8), each beside a limit baseline measured in the
# same run (medians quoted; ratio = cove / baseline):
#   1. warm pause / warm resume p50, p99: RUNS cycles of POST /sandboxes/{id}/pause (204) and
#      POST /v2/sandboxes/{id}/connect (201) on one idle `base` sandbox
#      vs. freezing / thawing a plain cgroup holding an idle process tree (the same freezer the shim
#      uses: v2 cgroup.freeze, else v1 freezer.state), RUNS cycles. Target ≤ 5 ms each way.
#   2. cold pause (pause, then `cove sandbox checkpoint`) and cold resume (connect → 201), COLD_RUNS
#      cycles, of an idle `base` sandbox and of one holding a python3 with 256 MiB touched
#      vs. raw `criu dump` / `criu restore` (same binary, the runtime's options) of an equivalent tree
#      outside Cove: the same program in its own pid+mount+net+uts+ipc namespaces, pivoted into an
#      overlay of the same base rootfs, in a cgroup of its own. Image sizes too. Target cold idle
#      ≤ 150 ms each way.
#   3. create p50 from a snapshot of a fresh `base` sandbox (its start-state checkpoint) vs. a plain
#      create of `base`, RUNS each (alternating; each killed after, untimed).
#
# Usage: bench/pause.sh [BUILD_DIR]      (as root; BUILD_DIR holds bin/cove, bin/cove-agent,
#                                          bin/cove-sandbox-init; default <repo>/build). Builds nothing.
#        bench/pause.sh --baseline-only  the baselines alone (no shim, no build needed)
# Env:   RUNS (30), COLD_RUNS (5), CRIU (/var/cache/cove/criu/4.2.1/criu, what tools/criu.sh builds),
#        ALLOW_OTHER_SHIM=1: run although another `cove serve` is up (its load taints the figures,
#        which the output then says); our ports, bridge and chain must still be free.
#
# Host resources it makes (and always removes again): state dir /var/tmp/cove-bench-pause.XXXXXX
# (config, database, shim log, checkpoint images, the baselines' overlays and images), `cove serve`
# on 127.0.0.1:3110 (API) and 127.0.0.1:3111 (sandboxes), bridge cove-bpause with subnet
# 10.84.0.0/16 and its COVE-*-cove-bpause iptables chains, the sandboxes it starts, a cgroup
# cove-bench-pause-<pid> (unified or freezer hierarchy) and the baseline process trees in it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
repo=$(cd "$here/.." && pwd)
baseline_only=0
if [[ ${1:-} == --baseline-only ]]; then baseline_only=1; shift; fi
build=${1:-$repo/build}
runs=${RUNS:-30}
cold_runs=${COLD_RUNS:-5}
criu=${CRIU:-/var/cache/cove/criu/4.2.1/criu}
api_port=3110
sandbox_port=3111
bridge="cove-bpause"
subnet=10.84.0.0/16
mem_mib=256

log() { printf 'bench-pause: [%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

((EUID == 0)) || die "must run as root (the shim makes containers, a bridge and iptables rules; the baseline uses namespaces, cgroups and CRIU)"
for n in "$runs" "$cold_runs"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "RUNS and COLD_RUNS must be positive integers"
done
[[ -x $criu ]] || die "CRIU not found at $criu (make deps / tools/criu.sh builds it; or set CRIU)"
for tool in node curl ip iptables ss setsid unshare findmnt losetup mount umount; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
if ((!baseline_only)); then
  [[ -d $build ]] || die "build dir not found: $build"
  build=$(cd "$build" && pwd)
  for b in cove cove-agent cove-sandbox-init; do
    [[ -x $build/bin/$b ]] || die "$build/bin/$b not found or not executable (build first, or pass the build dir)"
  done
  [[ -d $repo/tests/e2e/node_modules/e2b ]] || (cd "$repo/tests/e2e" && npm ci --no-audit --no-fund --silent)
fi
cove=$build/bin/cove

rootfs=$("$repo/rootfs-builder/build-base.sh")
[[ -d $rootfs ]] || die "build-base.sh printed no rootfs directory: '$rootfs'"

# Refuse rather than disturb (ports, our bridge and chain, another `cove serve`). The baselines
# alone use none of these, but another shim's load would distort them: say so.
# Any `cove serve` but our own (shim_pid, once it runs).
other_shim() {
  pgrep -x cove -a 2>/dev/null | grep -E '^[0-9]+ [^ ]*cove serve' | { grep -v "^${shim_pid:-none} " || true; } | head -n 1
}
disturbed=
if ((!baseline_only)) && [[ ${ALLOW_OTHER_SHIM:-} != 1 ]]; then
  refuse_if_busy "$api_port" "$sandbox_port"
elif ((!baseline_only)); then
  # ALLOW_OTHER_SHIM=1: our ports, bridge and chain must still be free; another shim only taints.
  for port in "$api_port" "$sandbox_port"; do
    [[ -z $(ss -Hltn "sport = :$port") ]] || die "something already listens on port $port"
  done
  ! ip link show "$bridge" >/dev/null 2>&1 || die "interface $bridge exists: another bench run is active, or one left it"
  ! iptables -w -S "COVE-FWD-$bridge" >/dev/null 2>&1 || die "chain COVE-FWD-$bridge exists: another bench run is active, or one left it"
  disturbed=$(other_shim)
  [[ -z $disturbed ]] || log "warning (ALLOW_OTHER_SHIM=1): another cove serve is running; its load is in these figures: $disturbed"
elif pgrep -x cove -a 2>/dev/null | grep -qE '^[0-9]+ [^ ]*cove serve'; then
  log "warning: another cove serve is running; its load is in these figures"
fi

# The freezer the shim uses (runtime/container/cgroups.cpp: the unified group when it has
# cgroup.freeze, else v1 freezer.state); the baselines' group goes in the same hierarchy.
cg=
for parent in /sys/fs/cgroup/unified /sys/fs/cgroup/freezer /sys/fs/cgroup; do
  [[ -f $parent/cgroup.procs ]] || continue
  [[ ! -e $parent/cove-bench-pause-$$ ]] || die "cgroup $parent/cove-bench-pause-$$ exists already"
  cg=$parent/cove-bench-pause-$$
  break
done
[[ -n $cg ]] || die "no cgroup hierarchy with a freezer found"

state=$(mktemp -d /var/tmp/cove-bench-pause.XXXXXX)
chmod 0755 "$state"
config=$state/cove.toml
ids_log=$state/all-ids
shim_pid=
shim_start_time=
key=
started=$SECONDS
bl_pids_file=$state/baseline-pids   # every pid that was PID 1 of a baseline tree (killed again by the cleanup)

client() {
  COVE_API=http://127.0.0.1:$api_port COVE_KEY=$key COVE_IDS_LOG=$ids_log COVE_BIN=$cove COVE_CONFIG=$config \
    COVE_STATE=$state E2B_API_URL=http://127.0.0.1:$api_port E2B_SANDBOX_URL=http://127.0.0.1:$sandbox_port \
    E2B_API_KEY=$key E2B_DEBUG='' node "$here/pause.mjs" "$@"
}

cleanup() {
  local rc=$? id m dev back pid left=() cgroup_gone
  trap - EXIT INT TERM
  set +e
  # Baseline trees: each PID 1 takes its namespace with it.
  [[ -d $cg ]] && { echo 0 >"$cg/cgroup.freeze" || echo THAWED >"$cg/freezer.state"; } 2>/dev/null
  if [[ -f $bl_pids_file ]]; then
    while read -r pid; do kill -KILL "$pid" 2>/dev/null; done <"$bl_pids_file"
  fi
  if [[ -f $cg/cgroup.procs ]]; then
    while read -r pid; do kill -KILL "$pid" 2>/dev/null; done <"$cg/cgroup.procs"
  fi
  if shim_alive; then
    for id in $(live_sandboxes); do
      "$cove" sandbox kill "$id" --config "$config" >/dev/null 2>>"$state/cli.log" || { log "cove sandbox kill $id failed"; rc=1; }
    done
    [[ -z $(live_sandboxes) ]] || { log "sandboxes still listed after kill"; rc=1; }
    kill -TERM "$shim_pid"
    for _ in $(seq 100); do shim_alive || break; sleep 0.1; done
    shim_alive && { log "cove serve still running 10 s after SIGTERM; SIGKILL"; kill -KILL "$shim_pid"; sleep 0.5; }
  fi
  if ((rc != 0)) && [[ -f $state/shim.log ]]; then
    log "---- last 40 lines of the shim log"
    tail -n 40 "$state/shim.log" >&2
  fi
  [[ -d $state/sandboxes ]] && { kill_undestroyed_sandboxes "$state" || rc=1; }
  [[ -f $config ]] && ! ((baseline_only)) && { "$cove" network down --config "$config" >/dev/null 2>>"$state/cli.log" || { log "cove network down failed"; rc=1; }; }
  wait 2>/dev/null
  if [[ -d $cg ]]; then
    cgroup_gone=0
    for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && { cgroup_gone=1; break; }; sleep 0.1; done
    ((cgroup_gone)) || left+=("cgroup $cg")
  fi
  if [[ $state == /var/tmp/cove-bench-pause.* && $state != *..* && -d $state ]]; then
    while read -r m; do umount -l "$m" 2>/dev/null; done < <(findmnt -rn -o TARGET | awk -v p="$state/" 'index($0, p) == 1' | sort -r)
    while read -r dev back; do
      [[ $back == "$state"/* ]] && { losetup -d "$dev" 2>/dev/null; left+=("loop device $dev"); }
    done < <(losetup -nO NAME,BACK-FILE 2>/dev/null)
    if [[ -f $ids_log ]]; then
      while read -r id; do
        for m in /sys/fs/cgroup/*/cove/"$id" /sys/fs/cgroup/cove/"$id"; do [[ -d $m ]] && left+=("cgroup $m"); done
      done <"$ids_log"
    fi
    ip link show "$bridge" >/dev/null 2>&1 && left+=("bridge $bridge")
    iptables -w -S "COVE-FWD-$bridge" >/dev/null 2>&1 && left+=("iptables chain COVE-FWD-$bridge")
    remove_state_dir
  fi
  report_leftovers "cleanup: no sandbox, baseline process, cgroup, mount, loop device, bridge or state dir of this run is left" || rc=1
  log "total runtime $((SECONDS - started)) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir "$cg"
if [[ $cg == /sys/fs/cgroup/unified/* && ! -f $cg/cgroup.freeze ]]; then
  rmdir "$cg"
  cg=/sys/fs/cgroup/freezer/cove-bench-pause-$$
  mkdir "$cg"
fi

# ---- the baseline trees -----------------------------------------------------------------------
# PID 1 of new pid/mount/net/uts/ipc namespaces, pivoted into an overlay of the base rootfs (as a
# sandbox is), in its own session, stdio on files inside (CRIU dumps no fd that points outside),
# in our cgroup. Idle: `sleep infinity`. mem: the same python3 as in the sandbox, child of it.
cat >"$state/enter.sh" <<'EOF'
#!/usr/bin/env bash
# enter.sh ROOT CGROUP ARGV...: PID 1 of the new namespaces joins CGROUP (alone: the launcher stays
# out, since CRIU's --freeze-cgroup wants nothing but the tree in it), pivots into ROOT, execs ARGV.
set -e
root=$1 cgroup=$2; shift 2
echo 0 >"$cgroup/cgroup.procs"
for fd in /proc/self/fd/*; do n=${fd##*/}; ((n > 2)) && eval "exec $n>&-" 2>/dev/null; done
mount --make-rprivate /
mount -t proc proc "$root/proc"
mkdir -p "$root/.old"
cd "$root"
pivot_root . .old
exec /usr/bin/setsid /bin/sh -c 'umount -l /.old && rmdir /.old && cd / && exec "$@" </tmp/.bench-in >/tmp/.bench-out 2>&1' sh "$@"
EOF
chmod 0755 "$state/enter.sh"
mem_program=$(node "$here/pause.mjs" mem-program)

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
bl_mem_pid() { # the python3 of a baseline mem tree (child of its PID 1)
  local c kids=()
  read -ra kids 2>/dev/null <"/proc/$1/task/$1/children" || true
  for c in "${kids[@]}"; do
    [[ $(tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null) == python3* ]] && { echo "$c"; return; }
  done
}

# bl_start KIND: sets bl_pid to the host pid of the tree's PID 1 once it runs (mem: once 256 MiB
# are touched).
bl_pid=
bl_start() {
  local kind=$1 d=$state/baseline-$1 launcher pid='' deadline
  mkdir -p "$d"/{upper,work,merged}
  mount -t overlay overlay -o "lowerdir=$rootfs,upperdir=$d/upper,workdir=$d/work" "$d/merged"
  : >"$d/merged/tmp/.bench-in"
  local -a prog=(sleep infinity)
  [[ $kind == mem ]] && prog=(/bin/sh -c 'python3 -c "$1" & exec sleep infinity' sh "$mem_program")
  setsid unshare -p -m -n -u -i --fork -- "$state/enter.sh" "$d/merged" "$cg" "${prog[@]}" </dev/null >"$d/enter.log" 2>&1 &
  launcher=$!
  deadline=$((SECONDS + 120))
  until [[ -n $pid && $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == "sleep infinity"* ]]; do
    pid=$(cat "/proc/$launcher/task/$launcher/children" 2>/dev/null || true)
    pid=${pid%% *}
    ((SECONDS < deadline)) || die "baseline $kind tree did not start: $(cat "$d/enter.log")"
    sleep 0.05
  done
  echo "$pid" >>"$bl_pids_file"
  if [[ $kind == mem ]]; then
    local py=
    until [[ -n $py ]] && (($(rss_kib "$py") >= mem_mib * 1024)); do
      py=$(bl_mem_pid "$pid")
      ((SECONDS < deadline)) || die "the baseline python3 did not reach $mem_mib MiB RSS in 120 s"
      sleep 0.2
    done
  fi
  bl_pid=$pid
}

now_ms() { local t=${EPOCHREALTIME/./}; echo "$((t / 1000)).$(printf '%03d' $((t % 1000)))"; }
elapsed_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# bl_criu KIND RUNS: RUNS dump/restore cycles with the runtime's options (criu.cpp: --manage-cgroups=
# ignore --tcp-established --file-locks --freeze-cgroup; restore --root --restore-sibling
# --restore-detached --pidfile; the /dev externals do not apply: no host device nodes are bound in).
# Restore runs inside our cgroup, as the runtime's runs inside the sandbox's. One JSON line.
bl_criu() {
  local kind=$1 n=$2 d=$state/baseline-$1 pid py_ns='' t0 t1 i dumps=() restores=() sizes=() ns
  bl_start "$kind"
  pid=$bl_pid
  [[ $kind == mem ]] && py_ns=$(awk '/^NSpid:/ { print $NF }' "/proc/$(bl_mem_pid "$pid")/status")
  for ((i = 0; i < n; i++)); do
    rm -rf "$d/img" && mkdir -m 0711 "$d/img"
    t0=$(now_ms)
    "$criu" dump --tree "$pid" --images-dir "$d/img" --log-file "$d/img/dump.log" -v4 --manage-cgroups=ignore \
      --tcp-established --file-locks --freeze-cgroup "$cg" ||
      die "baseline criu dump ($kind) failed: $(grep -m3 'Error' "$d/img/dump.log" | grep -v RLIMIT_NOFILE)"
    t1=$(now_ms)
    dumps+=("$(elapsed_ms "$t0" "$t1")")
    sizes+=("$(du -sb "$d/img" | cut -f1)")
    rm -f "$d/pidfile"
    t0=$(now_ms)
    (echo "$BASHPID" >"$cg/cgroup.procs" && exec "$criu" restore --images-dir "$d/img" --log-file "$d/img/restore.log" -v4 \
      --root "$d/merged" --pidfile "$d/pidfile" --restore-sibling --restore-detached --manage-cgroups=ignore \
      --tcp-established --file-locks) ||
      die "baseline criu restore ($kind) failed: $(grep -m3 'Error' "$d/img/restore.log" | grep -v RLIMIT_NOFILE)"
    t1=$(now_ms)
    restores+=("$(elapsed_ms "$t0" "$t1")")
    pid=$(<"$d/pidfile")
    echo "$pid" >>"$bl_pids_file"
    if [[ $kind == mem ]]; then
      ns=$(awk '/^NSpid:/ { print $NF }' "/proc/$(bl_mem_pid "$pid")/status" 2>/dev/null || true)
      [[ $ns == "$py_ns" ]] || die "baseline: after restore $((i + 1)) the python3 is not back (pid in its namespace '$ns', was $py_ns)"
    fi
  done
  kill -KILL "$pid"
  wait 2>/dev/null || true
  for _ in $(seq 50); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
  umount "$d/merged" 2>/dev/null || umount -l "$d/merged"
  rm -rf "$d"
  node -e '
    const [kind, d, r, s] = process.argv.slice(1)
    const nums = (x) => x.split(" ").filter(Boolean).map(Number)
    const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
    const st = (xs) => ({ n: xs.length, p50: Math.round(med(xs) * 100) / 100, all: xs })
    console.log(JSON.stringify({ kind, dump: st(nums(d)), restore: st(nums(r)), image_bytes_median: med(nums(s)) }))
  ' "$kind" "${dumps[*]}" "${restores[*]}" "${sizes[*]}"
}

# The warm baseline: the idle tree in our cgroup, frozen and thawed RUNS times.
bl_freeze() {
  local pid out
  bl_start idle
  pid=$bl_pid
  out=$(node "$here/pause.mjs" freeze "$cg" "$runs")
  kill -KILL "$pid"
  wait 2>/dev/null || true
  for _ in $(seq 50); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
  umount "$state/baseline-idle/merged" 2>/dev/null || umount -l "$state/baseline-idle/merged"
  rm -rf "$state/baseline-idle"
  echo "$out"
}

# CRIU's fixed start-up cost on this host (kernel feature detection, which it caches only on a
# tmpfs /run): the median of 3 `criu check`.
criu_floor() {
  local t0 t1 xs=()
  for _ in 1 2 3; do
    t0=$(now_ms); "$criu" check >/dev/null 2>&1 || true; t1=$(now_ms)
    xs+=("$(elapsed_ms "$t0" "$t1")")
  done
  printf '%s\n' "${xs[@]}" | sort -n | sed -n 2p
}

# ---- run ----------------------------------------------------------------------------------------
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
log "baselines: freezer ($runs cycles), criu dump/restore idle and $mem_mib MiB ($cold_runs cycles each)"
bl_warm=$(bl_freeze)
bl_idle=$(bl_criu idle "$cold_runs")
bl_mem=$(bl_criu mem "$cold_runs")
floor=$(criu_floor)
kdat_note=$(findmnt -n -o FSTYPE /run 2>/dev/null || echo "not a mount")

warm='{}' cold_idle='{}' cold_mem='{}' creates='{}'
if ((!baseline_only)); then
  cat >"$config" <<EOF
# Written by bench/pause.sh.
api_listen = ["127.0.0.1:$api_port"]
sandbox_listen = ["127.0.0.1:$sandbox_port"]
tls_listen = []
state_dir = "$state"
agent_path = "$build/bin/cove-agent"
max_timeout_s = 3600
bridge = "$bridge"
subnet = "$subnet"
base_rootfs = "$rootfs"
criu_path = "$criu"
pause_cold_after_s = 3600
EOF
  key=$(new_bench_key)
  start_bench_shim
  log "1/3: warm pause/resume, $runs cycles"
  warm=$(client warm "$runs")
  log "2/3: cold pause/resume, idle and $mem_mib MiB, $cold_runs cycles each"
  cold_idle=$(client cold idle "$cold_runs")
  cold_mem=$(client cold mem "$cold_runs")
  log "3/3: create from a snapshot vs. plain create, $runs each"
  creates=$(client create "$runs")
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
[[ -n $disturbed ]] || ((baseline_only)) || disturbed=$(other_shim)

node -e '
  const [w, ci, cm, cr, bw, bi, bm, floor, runFs, loadStart, loadEnd, only] = process.argv.slice(1)
  const J = JSON.parse
  const warm = J(w), cIdle = J(ci), cMem = J(cm), cre = J(cr), bWarm = J(bw), bIdle = J(bi), bMem = J(bm)
  const f = (x, d = 2) => (x === undefined || x === null || Number.isNaN(Number(x)) ? "n/a" : Number(x).toFixed(d))
  const row = (name, v, base, unit, note = "") => console.log(
    `${name.padEnd(40)} ${f(v).padStart(9)} ${unit}   baseline ${f(base).padStart(9)} ${unit}   ratio ${v > 0 && base > 0 ? (v / base).toFixed(2) : "n/a"}${note ? "   " + note : ""}`)
  const target = (v, t) => (v > 0 ? `(target ≤ ${t} ms: ${v <= t ? "met" : "missed"})` : "")
  const mib = (b) => f(b / 1048576, 1)
  console.log(`pause/resume: cove vs. same-run baselines; medians; ratio = cove / baseline; load ${loadStart} → ${loadEnd} on ${require("os").cpus().length} CPUs`)
  console.log(`1. warm: ${bWarm.freeze.n} cycles; baseline = ${bWarm.freezer} cgroup freeze/thaw of an idle tree (write + poll)${only === "1" ? "" : `; cove uses the ${warm.freezer ?? "?"} freezer, sandbox has ${warm.processes ?? "?"} processes / ${warm.threads ?? "?"} threads`}`)
  if (warm.error) console.log(`   ERROR in the warm cycles: ${warm.error}`)
  row("warm pause p50", warm.pause?.p50, bWarm.freeze.p50, "ms", target(warm.pause?.p50, 5))
  row("warm pause p99", warm.pause?.p99, bWarm.freeze.p99, "ms")
  row("warm resume p50", warm.resume?.p50, bWarm.thaw.p50, "ms", target(warm.resume?.p50, 5))
  row("warm resume p99", warm.resume?.p99, bWarm.thaw.p99, "ms")
  const cold = (label, c, b, t) => {
    console.log(`2. cold, ${label}: ${c.pause?.n ?? 0} cycles; baseline = criu dump / restore of ${label === "idle" ? "sleep infinity" : "the same python3 under sleep infinity"} as PID 1 of its own namespaces (${b.dump.n} cycles)`)
    if (c.error) console.log(`   ERROR: ${c.error}`)
    row(`cold pause (checkpoint cmd), ${label}`, c.checkpoint?.p50, b.dump.p50, "ms", t ? target(c.checkpoint?.p50, t) : "")
    row(`cold pause (pause + checkpoint), ${label}`, c.pause_checkpoint?.p50, b.dump.p50, "ms")
    row(`cold resume (connect 201), ${label}`, c.resume?.p50, b.restore.p50, "ms", t ? target(c.resume?.p50, t) : "")
    row(`image size, ${label}`, c.image_bytes_median / 1048576, b.image_bytes_median / 1048576, "MiB")
    if (c.checkpoint?.all) console.log(`   cove: checkpoint ${c.checkpoint.all.join(", ")} ms; resume ${c.resume.all.join(", ")} ms; baseline dump ${b.dump.all.join(", ")} ms, restore ${b.restore.all.join(", ")} ms`)
  }
  cold("idle", cIdle, bIdle, 150)
  cold(`${256} MiB`, cMem, bMem, 0)
  console.log(`   CRIU start-up floor on this host: \`criu check\` ${f(floor)} ms (kernel feature detection; CRIU caches it only in /run/criu.kdat on a tmpfs /run; /run here: ${runFs})`)
  console.log(`3. create: ${cre.with?.n ?? 0} creates each, alternating; "with" = from a snapshot of a fresh base sandbox (snapshot took ${f(cre.snapshot_ms)} ms)`)
  if (cre.error) console.log(`   ERROR: ${cre.error}`)
  row("create from snapshot p50", cre.with?.p50, cre.without?.p50, "ms", "(baseline: plain create of base)")
  row("create from snapshot p99", cre.with?.p99, cre.without?.p99, "ms")
' "$warm" "$cold_idle" "$cold_mem" "$creates" "$bl_warm" "$bl_idle" "$bl_mem" "$floor" "$kdat_note" \
  "$load_start" "$load_end" "$baseline_only"

[[ -z $disturbed ]] || echo "WARNING: another cove serve ran during this benchmark ($disturbed); rerun when the host is quiet"
failed=0
for j in "$warm" "$cold_idle" "$cold_mem" "$creates"; do
  node -e 'process.exit(JSON.parse(process.argv[1]).error ? 1 : 0)' "$j" || failed=1
done
((failed)) && exit 1
exit 0
