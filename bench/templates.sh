#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2016  # cleanup runs from the EXIT trap; node -e scripts are single-quoted
# Template-build benchmarks (issue 6), each beside a limit baseline measured in the same run
# (ratio = cove / baseline; medians of RUNS runs where repeated):
#   1. `base` from scratch: `cove template build templates/base` into an empty layers_dir
#      (debootstrap minbase + the RUN steps of templates/base/template.json in a build sandbox),
#      one run   vs. the same work without Cove: `debootstrap --variant=minbase bookworm` from the
#      same mirror, then those RUN commands with `chroot ... sh -c` (in `unshare -m` with proc, sys,
#      dev, dev/pts mounted, as rootfs-builder/build-base.sh does), one run, after Cove's.
#   2. `base` from cache: the same `cove template build` again (every step a cache hit)
#      vs. `cove sandbox list` (one admin-socket round trip of the same CLI).
#   3. a one-step template on top of `base` through the npm SDK over the plain-HTTP API
#      (Template().fromTemplate('base').runCmd(...) + Template.build):
#      cold (a unique command each run)   vs. Sandbox.create('base') + commands.run + kill;
#      cached (the same template again)   vs. Template.exists (one API round trip).
#      Targets: cold ≤ 10 s, cached ≤ 2 s.
#   4. layer sharing: two templates on top of `base` sharing their first step (50 MiB written to
#      /opt/shared) and differing in the second: bytes on disk for both (du -b of the union of
#      their layer dirs, each counted once) vs. the bytes their layer stacks take if copied.
#
# Usage: bench/templates.sh [BUILD_DIR]   (as root; BUILD_DIR holds bin/cove, bin/cove-agent,
#        bin/cove-sandbox-init; default <repo>/build). Builds nothing; takes ~10 minutes (the
#        from-scratch builds download Debian from the host's mirror).
# Env:   RUNS (5): runs of figures 2 and 3
#
# Host resources it makes (and always removes again): state dir /var/tmp/cove-bench-t.XXXXXX
# (config, database, shim log, a fresh layers_dir, the baseline's rootfs), `cove serve` on
# 127.0.0.1:3102 (API) and 127.0.0.1:3103 (sandboxes), bridge cove-bench-t with subnet
# 10.85.0.0/16 and its COVE-*-cove-bench-t iptables chains, the sandboxes and templates it makes.
# The shared layer cache (/var/cache/cove/layers) is neither used nor touched.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
repo=$(cd "$here/.." && pwd)
build=${1:-$repo/build}
runs=${RUNS:-5}
api_port=3102
sandbox_port=3103
bridge="cove-bench-t"
subnet=10.85.0.0/16
base_def=$repo/templates/base

log() { printf 'bench-templates: [%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

((EUID == 0)) || die "must run as root (the shim makes containers, a bridge and iptables rules)"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer"
[[ -d $build ]] || die "build dir not found: $build"
build=$(cd "$build" && pwd)
cove=$build/bin/cove
for b in cove cove-agent cove-sandbox-init; do
  [[ -x $build/bin/$b ]] || die "$build/bin/$b not found or not executable (build first, or pass the build dir)"
done
for tool in node curl ip iptables ss setsid findmnt losetup debootstrap unshare chroot sqlite3 du pgrep; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -f $base_def/template.json ]] || die "no $base_def/template.json"
[[ -d $repo/tests/e2e/node_modules/e2b ]] || (cd "$repo/tests/e2e" && npm ci --no-audit --no-fund --silent)

refuse_if_busy "$api_port" "$sandbox_port"

state=$(mktemp -d /var/tmp/cove-bench-t.XXXXXX)
config=$state/cove.toml
layers=$state/layers
shim_pid=
shim_start_time=
child_pid=   # the long-running command in flight (own session: see run_bg)
started=$SECONDS


# Processes of the process group (= session) `$1` leads, by pid.
group_pids() { pgrep -g "$1" 2>/dev/null || true; }
# SIGKILL to each, again until none is left (they fork meanwhile; the dead take a moment to be
# reaped) or 10 s have passed.
kill_group() {
  local leader=$1 pid
  for _ in $(seq 100); do
    [[ -n $(group_pids "$leader") ]] || return 0
    for pid in $(group_pids "$leader"); do kill -KILL "$pid" 2>/dev/null; done
    sleep 0.1
  done
}

cleanup() {
  local rc=$? dir id cg m dev back pid left=()
  trap - EXIT INT TERM
  set +e
  # A command still running (an interrupted run): its whole session, by pid.
  if [[ -n $child_pid ]]; then
    log "stopping the command in flight (pid $child_pid)"
    kill -TERM "$child_pid" 2>/dev/null
    sleep 1
    kill_group "$child_pid"
    wait "$child_pid" 2>/dev/null
  fi
  log "cleanup"
  if shim_alive; then
    for id in $(live_sandboxes); do
      "$cove" sandbox kill "$id" --config "$config" >/dev/null 2>>"$state/cli.log" || { log "cove sandbox kill $id failed"; rc=1; }
    done
    [[ -z $(live_sandboxes) ]] || { log "sandboxes still listed after kill"; rc=1; }
    log "cleanup: stopping the shim (pid $shim_pid)"
    kill -TERM "$shim_pid"
    for _ in $(seq 100); do shim_alive || break; sleep 0.1; done
    shim_alive && { log "cove serve still running 10 s after SIGTERM; SIGKILL"; kill -KILL "$shim_pid"; sleep 0.5; }
  fi
  # What the shim started in its own session and left (an interrupted debootstrap), by pid.
  if [[ -n $shim_pid ]] && [[ -n $(group_pids "$shim_pid") ]]; then
    log "processes the shim left in its session: $(group_pids "$shim_pid" | tr '\n' ' ')- killing them"
    kill_group "$shim_pid"
  fi
  if ((rc != 0)) && [[ -f $state/shim.log ]]; then
    log "---- last 40 lines of the shim log"
    tail -n 40 "$state/shim.log" >&2
  fi
  kill_undestroyed_sandboxes "$state" || rc=1
  if [[ -f $config ]]; then
    "$cove" network down --config "$config" >/dev/null 2>>"$state/cli.log" || { log "cove network down failed"; rc=1; }
  fi
  if [[ $state == /var/tmp/cove-bench-t.* && $state != *..* && -d $state ]]; then
    log "cleanup: removing $state"
    while read -r m; do umount -l "$m" 2>/dev/null; done < <(findmnt -rn -o TARGET | awk -v p="$state/" 'index($0, p) == 1' | sort -r)
    while read -r dev back; do
      [[ $back == "$state"/* ]] && { losetup -d "$dev" 2>/dev/null; left+=("loop device $dev"); }
    done < <(losetup -nO NAME,BACK-FILE 2>/dev/null)
    ip link show "$bridge" >/dev/null 2>&1 && left+=("bridge $bridge")
    iptables -w -S "COVE-FWD-$bridge" >/dev/null 2>&1 && left+=("iptables chain COVE-FWD-$bridge")
    [[ -n $shim_pid && -n $(group_pids "$shim_pid") ]] && left+=("processes of the shim's session: $(group_pids "$shim_pid" | tr '\n' ' ')")
    remove_state_dir
  fi
  report_leftovers "cleanup: no sandbox, shim, build process, mount, loop device, bridge or state dir of this run is left" || rc=1
  log "total runtime $((SECONDS - started)) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs "$@" in its own session in the background and waits for it: a signal to this script runs
# the trap at once (a foreground command would delay it for minutes), a Ctrl-C does not reach the
# command directly, and cleanup can end its whole session by pid. stdout goes to $1.
run_bg() {
  local out=$1 rc=0
  shift
  setsid "$@" </dev/null >"$out" 2>>"$state/run.log" &
  child_pid=$!
  wait "$child_pid" || rc=$?
  child_pid=
  return "$rc"
}

# Wall-clock microseconds; "seconds" of a difference with millisecond precision.
now_us() { local t=$EPOCHREALTIME; echo "${t//[.,]/}"; }
seconds() { local us=$1; printf '%d.%03d' $((us / 1000000)) $((us % 1000000 / 1000)); }

# ---- The shim ------------------------------------------------------------------------------------
cat >"$config" <<EOF
# Written by bench/templates.sh.
api_listen = ["127.0.0.1:$api_port"]
sandbox_listen = ["127.0.0.1:$sandbox_port"]
tls_listen = []
domain = ""
state_dir = "$state"
agent_path = "$build/bin/cove-agent"
layers_dir = "$layers"
max_timeout_s = 3600
max_sandboxes = 100
bridge = "$bridge"
subnet = "$subnet"
EOF
key=$(new_bench_key)
start_bench_shim
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

build_base() {
  run_bg "$1" "$cove" template build "$base_def" --config "$config" ||
    die "cove template build templates/base failed: $(tail -n 5 "$1" "$state/run.log")"
}

# ---- 1. base from scratch ------------------------------------------------------------------------
log "1/4: cove template build templates/base into an empty layers_dir (minutes)"
t0=$(now_us)
build_base "$state/build-base-scratch.log"
end_us=$(now_us)
scratch_cove=$(seconds $((end_us - t0)))
# Cove's phases from its build log ("<RFC 3339 time> <message>"): debootstrap (to the FROM line),
# each step (to the next step's line), finalize (to the end of the build).
cove_phases=$(node -e '
  const [file, endUs] = process.argv.slice(1)
  const marks = []
  for (const line of require("fs").readFileSync(file, "utf8").split("\n")) {
    const m = /^(\S+) (.*)$/.exec(line)
    if (!m || Number.isNaN(Date.parse(m[1]))) continue
    if (/minbase: debootstrap from |^FROM |^\[builder \d+\/\d+\]|^\[finalize\]/.test(m[2])) marks.push(Date.parse(m[1]))
  }
  marks.push(Number(endUs) / 1000)
  const out = []
  for (let i = 0; i + 1 < marks.length; i++) if (i !== 1) out.push(((marks[i + 1] - marks[i]) / 1000).toFixed(3))
  console.log(out.join(" "))
' "$state/build-base-scratch.log" "$end_us")
log "1/4: cove: $scratch_cove s (debootstrap, each RUN, finalize: $cove_phases s)"
# The mirror the shim used (its rule is build-base.sh's: the host's apt sources), from its log.
mirror=$(sed -n 's/.*minbase: debootstrap from \([^ ]*\).*/\1/p' "$state/build-base-scratch.log" | head -n 1)
[[ $mirror =~ ^https?://[^[:space:]]+$ ]] || die "the scratch build logged no debootstrap mirror (was the layers_dir not empty?)"

# The same RUN commands, in order, one per NUL-terminated record.
mapfile -d '' run_cmds < <(node -e '
  const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))
  for (const s of d.steps ?? []) {
    if (s.type !== "RUN") throw new Error(`templates/base has a ${s.type} step; the baseline only knows RUN`)
    process.stdout.write(s.args[0] + "\0")
  }
' "$base_def/template.json")
((${#run_cmds[@]})) || die "templates/base/template.json has no RUN steps"
suite=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).fromDebian)' "$base_def/template.json")
[[ $suite =~ ^[a-z]+$ ]] || die "templates/base has no fromDebian suite"

log "1/4: baseline: debootstrap --variant=minbase $suite from $mirror, then the ${#run_cmds[@]} RUN commands in a chroot"
raw=$state/raw-base
t0=$(now_us)
run_bg "$state/raw-debootstrap.log" unshare --mount --propagation private \
  debootstrap --variant=minbase "$suite" "$raw" "$mirror" || die "baseline debootstrap failed: $(tail -n 5 "$state/raw-debootstrap.log")"
raw_phases=("$(seconds $(($(now_us) - t0)))")
for c in "${run_cmds[@]}"; do
  t1=$(now_us)
  run_bg "$state/raw-chroot.log" unshare --mount --propagation private bash -euo pipefail -c '
    t=$1 c=$2
    mount -t proc proc "$t/proc"
    mount --bind -o ro /sys "$t/sys"
    mount --bind /dev "$t/dev"
    mount --bind /dev/pts "$t/dev/pts"
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C chroot "$t" /bin/sh -c "$c"
  ' mounts "$raw" "$c" || die "baseline chroot command failed: $(tail -n 5 "$state/raw-chroot.log" "$state/run.log")"
  raw_phases+=("$(seconds $(($(now_us) - t1)))")
done
scratch_raw=$(seconds $(($(now_us) - t0)))
log "1/4: baseline: $scratch_raw s (debootstrap, then each RUN: ${raw_phases[*]} s)"
rm -rf --one-file-system "$raw"

# ---- 2. base from cache --------------------------------------------------------------------------
log "2/4: cove template build templates/base again x $runs (all cached), alternating with cove sandbox list"
cached_cove=() list_rt=()
for i in $(seq "$runs"); do
  t0=$(now_us)
  build_base "$state/build-base-cached-$i.log"
  cached_cove+=("$(seconds $(($(now_us) - t0)))")
  t0=$(now_us)
  run_bg "$state/list.out" "$cove" sandbox list --config "$config" || die "cove sandbox list failed"
  list_rt+=("$(seconds $(($(now_us) - t0)))")
done
# Every step of a rebuild must come from the cache, or figure 2 measures something else.
if grep -q 'debootstrap from' "$state/build-base-cached-1.log"; then die "the rebuild of base ran debootstrap again"; fi

# ---- 3. one-step templates through the SDK -------------------------------------------------------
sdk_env=(env -u E2B_DOMAIN -u E2B_DEBUG -u E2B_ACCESS_TOKEN E2B_API_URL="http://127.0.0.1:$api_port"
  E2B_SANDBOX_URL="http://127.0.0.1:$sandbox_port" E2B_API_KEY="$key")
log "3/4: one-step template on base through the SDK: $runs cold builds alternating with sandbox create+run+kill, $runs cached rebuilds, $runs Template.exists"
run_bg "$state/one-step.json" "${sdk_env[@]}" node "$here/templates.mjs" one-step "$runs" ||
  die "bench/templates.mjs one-step failed: $(tail -n 20 "$state/run.log")"
one_step=$(<"$state/one-step.json")

# ---- 4. layer sharing ----------------------------------------------------------------------------
log "4/4: two templates on base sharing a 50 MiB first step"
run_bg "$state/sharing.json" "${sdk_env[@]}" node "$here/templates.mjs" sharing ||
  die "bench/templates.mjs sharing failed: $(tail -n 20 "$state/run.log")"
sharing=$(<"$state/sharing.json")
log "4/4: built; measuring the layers"
db=$(find "$state" -maxdepth 1 -name '*.db' | head -n 1)
[[ -f $db ]] || die "no database in the state dir"
# A template's layer stack as the store records it (uppermost first), one directory a line.
layer_dirs() {
  local id=$1 json
  [[ $id =~ ^[A-Za-z0-9_-]+$ ]] || die "unexpected template id '$id'"
  json=$(sqlite3 -readonly "$db" "SELECT layers FROM templates WHERE id = '$id' OR id IN (SELECT template_id FROM template_aliases WHERE alias = '$id') LIMIT 1")
  [[ -n $json ]] || die "template $id has no row in the store"
  node -e '
    const [json, root] = process.argv.slice(1)
    for (const l of JSON.parse(json)) console.log(l.startsWith("/") ? l : `${root}/${l}`)
  ' "$json" "$layers"
}
tid() { node -e 'console.log(JSON.parse(process.argv[1])[process.argv[2]])' "$sharing" "$1"; }
mapfile -t dirs_a < <(layer_dirs "$(tid a)")
mapfile -t dirs_b < <(layer_dirs "$(tid b)")
mapfile -t dirs_base < <(layer_dirs base)
((${#dirs_a[@]} && ${#dirs_b[@]} && ${#dirs_base[@]})) || die "a template has no layers"
for d in "${dirs_a[@]}" "${dirs_b[@]}" "${dirs_base[@]}"; do
  [[ -d $d && $d == "$layers"/* ]] || die "layer $d is not a directory in this run's layers_dir"
done
sum_du() { local d total=0; for d in "$@"; do total=$((total + $(du -sb "$d" | cut -f1))); done; echo "$total"; }
copied_a=$(sum_du "${dirs_a[@]}")
copied_b=$(sum_du "${dirs_b[@]}")
mapfile -t union < <(printf '%s\n' "${dirs_a[@]}" "${dirs_b[@]}" | sort -u)
# One du over the union counts every directory (and hard-linked file) once.
stored=$(du -scb "${union[@]}" | tail -n 1 | cut -f1)
shared_layers=$(comm -12 <(printf '%s\n' "${dirs_a[@]}" | sort) <(printf '%s\n' "${dirs_b[@]}" | sort) | wc -l)
# The same above base: the layers each template adds to base's stack.
mapfile -t own_a < <(comm -23 <(printf '%s\n' "${dirs_a[@]}" | sort) <(printf '%s\n' "${dirs_base[@]}" | sort))
mapfile -t own_b < <(comm -23 <(printf '%s\n' "${dirs_b[@]}" | sort) <(printf '%s\n' "${dirs_base[@]}" | sort))
((${#own_a[@]} && ${#own_b[@]})) || die "a sharing template adds no layer to base"
own_copied=$(($(sum_du "${own_a[@]}") + $(sum_du "${own_b[@]}")))
mapfile -t own_union < <(printf '%s\n' "${own_a[@]}" "${own_b[@]}" | sort -u)
own_stored=$(du -scb "${own_union[@]}" | tail -n 1 | cut -f1)
log "4/4: measured"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

node -e '
  const [scratchCove, scratchRaw, cachedList, listList, oneStepJson, sharingJson, copiedA, copiedB, stored, nA, nB, nShared, loadStart, loadEnd,
    covePhases, rawPhases, ownCopied, ownStored, nOwnA, nOwnB] = process.argv.slice(1)
  const nums = (s) => s.trim().split(/\s+/).map(Number)
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2 }
  const o = JSON.parse(oneStepJson), sh = JSON.parse(sharingJson)
  const cached = nums(cachedList), list = nums(listList)
  const f = (x, d = 3) => Number(x).toFixed(d)
  const target = (v, limit) => `target ≤ ${limit} s: ${v <= limit ? "met" : "missed"}`
  const mib = (b) => `${f(b / 1048576, 1)} MiB`
  const rows = [
    ["1. base from scratch (1 run)", `${f(scratchCove, 1)} s`, `${f(scratchRaw, 1)} s debootstrap + chroot`, f(scratchCove / scratchRaw, 2), ""],
    [`2. base from cache (median of ${cached.length})`, `${f(median(cached))} s`, `${f(median(list))} s cove sandbox list`, f(median(cached) / median(list), 2), ""],
    [`3. one-step on base, cold (median of ${o.runs})`, `${f(o.cold.median_s)} s`, `${f(o.sandbox_floor.median_s)} s create+run+kill`, f(o.cold.median_s / o.sandbox_floor.median_s, 2), target(o.cold.median_s, 10)],
    [`3. one-step on base, cached (median of ${o.runs})`, `${f(o.cached.median_s)} s`, `${f(o.exists.median_s)} s Template.exists`, f(o.cached.median_s / o.exists.median_s, 2), target(o.cached.median_s, 2)],
    ["4. two templates on base, whole stacks", `${mib(+stored)} stored`, `${mib(+copiedA + +copiedB)} if copied`, f(stored / (+copiedA + +copiedB), 2), ""],
    ["4. the same, layers above base only", `${mib(+ownStored)} stored`, `${mib(+ownCopied)} if copied`, f(ownStored / ownCopied, 2), ""],
  ]
  const head = ["figure", "cove", "baseline", "ratio", "target"]
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const line = (r) => r.map((c, i) => c.padEnd(w[i])).join("  ").trimEnd()
  console.log("template builds: cove vs. a same-run baseline; ratio = cove / baseline")
  console.log(`  1: cove template build templates/base into an empty layers_dir vs. debootstrap minbase + the same RUN commands in a chroot (after cove, same mirror)`)
  const cp = nums(covePhases), rp = nums(rawPhases)
  console.log(`     debootstrap ${f(cp[0], 1)} s vs. ${f(rp[0], 1)} s; ${rp.slice(1).map((r, i) => `RUN ${i + 1} ${f(cp[i + 1], 1)} s vs. ${f(r, 1)} s`).join("; ")}; finalize ${f(cp[rp.length], 1)} s (cove only)`)
  console.log(`  2: runs ${cached.map((x) => f(x)).join(", ")} s; cove sandbox list ${list.map((x) => f(x)).join(", ")} s`)
  console.log(`  3: npm e2b over the plain-HTTP API; cold ${o.cold.all_s.join(", ")} s; create+run+kill ${o.sandbox_floor.all_s.join(", ")} s`)
  console.log(`     cached ${o.cached.all_s.join(", ")} s; Template.exists ${o.exists.all_s.join(", ")} s`)
  console.log(`  4: RUN 50 MiB to /opt/shared, then RUN echo a / echo b; layer stacks of ${nA} and ${nB} layers, ${nShared} shared (${nOwnA} and ${nOwnB} above base);`)
  console.log(`     copied = sum of du -sb per layer (${mib(+copiedA)} + ${mib(+copiedB)}), stored = du -scb of the union; builds ${sh.a_build_s} s, ${sh.b_build_s} s`)
  console.log(`  load average (1/5/15 min) at the start ${loadStart}, at the end ${loadEnd} on ${require("os").cpus().length} CPUs`)
  console.log("")
  console.log(line(head))
  for (const r of rows) console.log(line(r))
' "$scratch_cove" "$scratch_raw" "${cached_cove[*]}" "${list_rt[*]}" "$one_step" "$sharing" \
  "$copied_a" "$copied_b" "$stored" "${#dirs_a[@]}" "${#dirs_b[@]}" "$shared_layers" "$load_start" "$load_end" \
  "$cove_phases" "${raw_phases[*]}" "$own_copied" "$own_stored" "${#own_a[@]}" "${#own_b[@]}"
exit 0
