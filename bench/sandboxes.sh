#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2016  # cleanup runs from the EXIT trap; node -e scripts are single-quoted
# Sandbox-creation benchmarks of the host shim, each beside a limit baseline measured in the same
# run (medians quoted, ratio = cove / baseline):
#   1. create→ready latency: CREATES sequential POST /v2/sandboxes (each followed by its DELETE,
#      not timed), p50/p99   vs. `runc run` of /bin/true in the same rootfs (RUNC_RUNS runs)
#   2. creates per second with CONCURRENCY in flight (CREATES creates; killed afterwards)
#      vs. `runc run` of /bin/true the same way
#   3. host memory per idle sandbox: IDLE sandboxes, ~5 s settle, MemAvailable delta / IDLE
#      vs. IDLE `runc run -d` containers of `sleep infinity` measured the same way
#
# Usage: bench/sandboxes.sh [BUILD_DIR]   (as root; BUILD_DIR holds bin/cove, bin/cove-agent,
#        bin/cove-sandbox-init; default <repo>/build). Builds nothing.
# Env:   CREATES (200), CONCURRENCY (20), IDLE (500), RUNC_RUNS (50)
#
# Host resources it makes (and always removes again): state dir /var/tmp/cove-bench.XXXXXX
# (config, database, shim log, runc state, bundles), `cove serve` on 127.0.0.1:3100 (API) and
# 127.0.0.1:3101 (sandboxes), bridge cove-bench with subnet 10.86.0.0/16 and its rules in the
# shim's COVE-* iptables chains, the sandboxes and runc containers it starts.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
repo=$(cd "$here/.." && pwd)
build=${1:-$repo/build}
creates=${CREATES:-200}
concurrency=${CONCURRENCY:-20}
idle=${IDLE:-500}
runc_runs=${RUNC_RUNS:-50}
api_port=3100
sandbox_port=3101
bridge="cove-bench"
subnet=10.86.0.0/16
subnet_re='10\.86\.'
settle_s=5

log() { printf 'bench-sandboxes: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

((EUID == 0)) || die "must run as root (the shim makes containers, a bridge and iptables rules)"
for n in "$creates" "$concurrency" "$idle" "$runc_runs"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "CREATES, CONCURRENCY, IDLE and RUNC_RUNS must be positive integers"
done
[[ -d $build ]] || die "build dir not found: $build"
build=$(cd "$build" && pwd)
cove=$build/bin/cove
for b in cove cove-agent cove-sandbox-init; do
  [[ -x $build/bin/$b ]] || die "$build/bin/$b not found or not executable (build first, or pass the build dir)"
done
for tool in node runc curl ip iptables ss setsid findmnt losetup; do
  command -v "$tool" >/dev/null || die "$tool not found"
done

rootfs=$("$repo/rootfs-builder/build-base.sh")
[[ -d $rootfs ]] || die "build-base.sh printed no rootfs directory: '$rootfs'"

# Refuse rather than disturb: fixed ports, our bridge, and the shim's COVE-* chains, which have
# fixed names and which `cove serve` refills for its own bridge only (another shim running now
# would lose its rules).
for port in "$api_port" "$sandbox_port"; do
  [[ -z $(ss -Hltn "sport = :$port") ]] || die "something already listens on port $port"
done
! ip link show "$bridge" >/dev/null 2>&1 || die "interface $bridge exists: another bench run is active, or one left it"
other_rules() {
  # Only a shim built before per-bridge chains (COVE-IN/FWD/NAT-<bridge>) shares chains with us.
  { iptables -w -S; iptables -w -t nat -S; } 2>/dev/null | grep -E '^-A COVE-(INPUT|FORWARD|POSTROUTING) ' | grep -vE "\b$bridge\b|\b$subnet_re" || true
}
[[ -z $(other_rules) ]] || die "another shim has rules in the COVE-* iptables chains (is an e2e run active?); try again when it is done"

state=$(mktemp -d /var/tmp/cove-bench.XXXXXX)
config=$state/cove.toml
runc_root=$state/runc
ids_log=$state/all-ids   # every sandbox id this run created (for the leftover check)
shim_pid=
shim_start_time=
started=$SECONDS


client() { COVE_API=http://127.0.0.1:$api_port COVE_KEY=${key:-} COVE_IDS_LOG=$ids_log COVE_BENCH_TMP=$state node "$here/sandboxes.mjs" "$@"; }


cleanup() {
  local rc=$? ids id dir dev back m cg left=() table line words
  trap - EXIT INT TERM
  set +e
  # runc containers (only ours: they live under our own --root).
  if [[ -d $runc_root ]] && [[ -n $(ls -A "$runc_root" 2>/dev/null) ]]; then
    client runc-delete 20 "$runc_root" >/dev/null
  fi
  # Sandboxes, through the shim (it leaves them running when it stops).
  if shim_alive; then
    ids=$(live_sandboxes)
    for id in $ids; do
      "$cove" sandbox kill "$id" --config "$config" >/dev/null 2>>"$state/cli.log" || log "cove sandbox kill $id failed"
    done
    [[ -z $(live_sandboxes) ]] || { log "sandboxes still listed after kill"; rc=1; }
    kill -TERM "$shim_pid"
    for _ in $(seq 50); do shim_alive || break; sleep 0.1; done
    shim_alive && { log "cove serve still running 5 s after SIGTERM; SIGKILL"; kill -KILL "$shim_pid"; sleep 0.5; }
  fi
  if ((rc != 0)) && [[ -f $state/shim.log ]]; then
    log "---- last 40 lines of the shim log"
    tail -n 40 "$state/shim.log" >&2
  fi
  kill_undestroyed_sandboxes "$state" || rc=1
  # The bridge and our iptables rules: `cove network down` removes the COVE-* chains whole, so only
  # when nobody else has rules in them (checked at the start; checked again here).
  if [[ -f $config ]]; then
    if [[ -z $(other_rules) ]]; then
      "$cove" network down --config "$config" >/dev/null 2>>"$state/cli.log" || { log "cove network down failed"; rc=1; }
    else
      log "other rules appeared in the COVE-* chains; removing only ours"
      for table in filter nat; do
        while read -r line; do
          read -ra words <<<"${line/#-A /-D }"
          iptables -w -t "$table" "${words[@]}"
        done < <(iptables -w -t "$table" -S | grep -E -- "^-A COVE-.*(\b$bridge\b|\b$subnet_re)" || true)
      done
      ip link del "$bridge" 2>/dev/null
    fi
  fi
  # Mounts and loop devices under the state dir, then the dir itself.
  if [[ $state == /var/tmp/cove-bench.* && $state != *..* && -d $state ]]; then
    while read -r m; do umount -l "$m" 2>/dev/null; done < <(findmnt -rn -o TARGET | awk -v p="$state/" 'index($0, p) == 1' | sort -r)
    while read -r dev back; do
      [[ $back == "$state"/* ]] && { losetup -d "$dev" 2>/dev/null; left+=("loop device $dev"); }
    done < <(losetup -nO NAME,BACK-FILE 2>/dev/null)
    # The leftover check: nothing of ours may remain.
    if [[ -f $ids_log ]]; then
      while read -r id; do
        for cg in /sys/fs/cgroup/*/cove/"$id" /sys/fs/cgroup/cove/"$id"; do [[ -d $cg ]] && left+=("cgroup $cg"); done
      done <"$ids_log"
    fi
    while read -r cg; do left+=("cgroup $cg"); rmdir "$cg" 2>/dev/null; done < <(find /sys/fs/cgroup -maxdepth 4 -type d -name 'cove-bench-*' 2>/dev/null)
    ip link show "$bridge" >/dev/null 2>&1 && left+=("bridge $bridge")
    [[ -d $runc_root && -n $(ls -A "$runc_root" 2>/dev/null) ]] && left+=("runc containers under $runc_root")
    remove_state_dir
  fi
  report_leftovers "cleanup: no sandbox, runc container, cgroup, loop device, mount or bridge of this run is left" || rc=1
  log "total runtime $((SECONDS - started)) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Config, key, shim.
cat >"$config" <<EOF
# Written by bench/sandboxes.sh.
api_listen = ["127.0.0.1:$api_port"]
sandbox_listen = ["127.0.0.1:$sandbox_port"]
tls_listen = []
state_dir = "$state"
agent_path = "$build/bin/cove-agent"
max_timeout_s = 3600
max_sandboxes = 1000
bridge = "$bridge"
subnet = "$subnet"
base_rootfs = "$rootfs"
EOF
key=$(new_bench_key)
start_bench_shim

# The runc bundles: `runc spec` with the same rootfs, read-only, no terminal.
bundle() {
  local dir=$1
  shift
  mkdir -p "$dir"
  (cd "$dir" && runc spec)
  node -e '
    const fs = require("fs"), [file, rootfs, ...args] = process.argv.slice(1)
    const c = JSON.parse(fs.readFileSync(file, "utf8"))
    c.root = { path: rootfs, readonly: true }
    c.process.args = args
    c.process.terminal = false
    fs.writeFileSync(file, JSON.stringify(c, null, 1))
  ' "$dir/config.json" "$rootfs" "$@"
}
bundle "$state/bundle-true" /bin/true
bundle "$state/bundle-sleep" sleep infinity
mkdir -p "$runc_root"

# Fails the run when a phase reported failures (after printing them).
check() {
  local what=$1 json=$2
  node -e '
    const j = JSON.parse(process.argv[2])
    if (j.failures) { console.error(`bench-sandboxes: ${process.argv[1]}: ${j.failures} failures; first: ${j.first_error}`); process.exit(1) }
  ' "$what" "$json"
}
failed=0
# Another shim starting during the run refills the COVE-* chains with its rules only and can take
# the same host veth names: the figures of such a run are not clean.
disturbed=0
watch_others() { [[ -z $(other_rules) ]] || { ((disturbed)) || log "another shim is running now: this run's figures are disturbed"; disturbed=1; }; }

# Warm-up (the first create makes the empty disk image; page cache for both sides).
log "warm-up"
check "warm-up" "$(client cove-seq 5)" || failed=1
client runc-seq 5 "$runc_root" "$state/bundle-true" >/dev/null

# 1. create→ready latency.
log "1/3: $creates sequential creates, $runc_runs sequential runc runs"
seq_cove=$(client cove-seq "$creates")
check "sequential creates" "$seq_cove" || failed=1
seq_runc=$(client runc-seq "$runc_runs" "$runc_root" "$state/bundle-true")
check "sequential runc run" "$seq_runc" || failed=1
watch_others

# 2. Throughput at concurrency.
log "2/3: $creates creates with $concurrency in flight, the same for runc run"
conc_cove=$(client cove-conc "$creates" "$concurrency")
check "concurrent creates" "$conc_cove" || failed=1
conc_runc=$(client runc-conc "$creates" "$concurrency" "$runc_root" "$state/bundle-true")
check "concurrent runc run" "$conc_runc" || failed=1
watch_others
[[ -z $(live_sandboxes) ]] || die "sandboxes still live after phase 2"

# 3. Memory per idle sandbox. Created $concurrency at a time (the figure is memory, not speed).
log "3/3: $idle idle sandboxes, then $idle runc containers of sleep infinity (${settle_s} s settle each)"
sleep "$settle_s"
mem_cove_before=$(client memory cove "$shim_pid" /dev/null)
idle_made=$(COVE_TIMEOUT_S=3600 client cove-create "$idle" "$concurrency" "$state/idle-ids")
check "idle creates" "$idle_made" || failed=1
sleep "$settle_s"
mem_cove_after=$(client memory cove "$shim_pid" "$state/idle-ids")
idle_killed=$(client cove-kill "$concurrency" "$state/idle-ids")
check "idle kills" "$idle_killed" || failed=1
watch_others
[[ -z $(live_sandboxes) ]] || die "sandboxes still live after phase 3"

sleep "$settle_s"
mem_runc_before=$(client memory runc 0 "$runc_root")
runc_made=$(client runc-detach "$idle" "$concurrency" "$runc_root" "$state/bundle-sleep")
check "runc run -d" "$runc_made" || failed=1
sleep "$settle_s"
mem_runc_after=$(client memory runc 0 "$runc_root")
runc_deleted=$(client runc-delete "$concurrency" "$runc_root")
check "runc delete" "$runc_deleted" || failed=1
watch_others

node -e '
  const [sc, sr, cc, cr, cb, ca, rb, ra, im, rm, creates, conc] = process.argv.slice(1).map((s) => JSON.parse(s))
  const f = (x, d = 1) => x.toFixed(d)
  const line = (name, v, unit, base, target) =>
    console.log(`${name.padEnd(26)} ${f(v).padStart(7)} ${unit.padEnd(4)} (${base.name} ${f(base.v)} ${unit}, ratio ${f(v / base.v, 2)}${target ? `; target ${target}` : ""})`)
  console.log(`sandbox creation: cove ${creates} creates (each DELETEd after, untimed) vs. runc run of /bin/true in the same rootfs (${sr.n} runs); ratio = cove / runc`)
  line("create→ready p50", sc.p50_ms, "ms", { name: "runc run p50", v: sr.p50_ms }, "≤ 25 ms")
  line("create→ready p99", sc.p99_ms, "ms", { name: "runc run p99", v: sr.p99_ms })
  line(`creates/s @${conc}`, cc.per_s, "/s", { name: `runc run/s @${conc}`, v: cr.per_s }, "≥ 100/s")
  console.log(`  (${creates} creates in ${cc.wall_s} s, DELETEd afterwards untimed; latency under load p50 ${cc.p50_ms} ms p99 ${cc.p99_ms} ms; runc ${cr.n} runs in ${cr.wall_s} s)`)
  const n = im.created, m = rm.created
  const per = (b, a, k, count) => (b[k] - a[k]) / count / 1024
  const grow = (b, a, k, count) => (a[k] - b[k]) / count / 1024
  const hostCove = per(cb, ca, "mem_available_kib", n), hostRunc = per(rb, ra, "mem_available_kib", m)
  console.log(`idle memory: ${n} sandboxes vs. ${m} runc run -d containers of sleep infinity, ${5} s settle; MiB per sandbox`)
  line("host memory/sandbox", hostCove, "MiB", { name: "runc sleep", v: hostRunc }, "≤ 3 MiB")
  console.log(`  (MemAvailable delta / count; it fell by ${f((cb.mem_available_kib - ca.mem_available_kib) / 1024)} MiB for cove, ${f((rb.mem_available_kib - ra.mem_available_kib) / 1024)} MiB for runc; host-wide, so other load on the machine is in it)`)
  line("  sandbox cgroup usage", ca.cgroup_usage_sum_kib / ca.cgroups / 1024, "MiB", { name: "runc cgroup", v: ra.cgroup_usage_sum_kib / ra.cgroups / 1024 })
  console.log(`    (memory.usage_in_bytes of each sandbox memory cgroup, averaged over ${ca.cgroups} / ${ra.cgroups}: its processes, page cache and kernel memory charged to it)`)
  line("  agent RSS", ca.rss_sum_kib / ca.processes / 1024, "MiB", { name: "sleep RSS", v: ra.rss_sum_kib / ra.processes / 1024 })
  line("  agent PSS", ca.pss_sum_kib / ca.processes / 1024, "MiB", { name: "sleep PSS", v: ra.pss_sum_kib / ra.processes / 1024 })
  console.log(`    (VmRSS / smaps_rollup Pss of every process in the sandboxes cgroups, averaged per process: ${ca.processes} cove, ${ra.processes} runc)`)
  console.log(`  shim RSS ${f(cb.shim_rss_kib / 1024)} → ${f(ca.shim_rss_kib / 1024)} MiB (+${f((ca.shim_rss_kib - cb.shim_rss_kib) / n)} KiB per sandbox); Slab +${f(grow(cb, ca, "slab_kib", n))} MiB/sandbox (runc +${f(grow(rb, ra, "slab_kib", m))})`)
  console.log(`  (${n} sandboxes created in ${im.wall_s} s, ${m} runc containers in ${rm.wall_s} s)`)
' "$seq_cove" "$seq_runc" "$conc_cove" "$conc_runc" "$mem_cove_before" "$mem_cove_after" \
  "$mem_runc_before" "$mem_runc_after" "$idle_made" "$runc_made" "$creates" "$concurrency"

((disturbed)) && echo "WARNING: another cove shim ran during this benchmark (COVE-* rules of another bridge appeared); rerun when the host is quiet"
((failed || disturbed)) && exit 1
exit 0
