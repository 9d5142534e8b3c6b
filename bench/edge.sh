#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2016  # cleanup runs from the EXIT trap; node -e scripts are single-quoted
# TLS edge benchmarks (issue 5), each beside a baseline measured in the same run:
#   1. commands.run('true') through the edge (npm e2b, only E2B_DOMAIN, E2B_API_KEY,
#      NODE_EXTRA_CA_CERTS; RUNS sequential runs after a warm-up), p50/p99
#      vs. the same SDK in debug mode against a cove-agent on localhost:49983 (tests/e2e/sandbox.sh,
#      as bench/run.sh does). Edge overhead = p50(edge) − p50(direct); target ≤ 1 ms.
#      Also: the same through the plain-HTTP listeners (3100/3101), and the edge with http2 = false.
#   2. a DOWNLOAD_MIB download (GET /files, identity) through the edge with curl over HTTP/1.1
#      and h2, DOWNLOAD_RUNS runs each, median MiB/s
#      vs. the same curl download from cove-bench-tls-download-baseline (a minimal OpenSSL HTTPS
#      server on loopback: same certificate, TLS 1.3, the suite the edge negotiated). Target ≥ 70 %.
#   3. STREAMS idle Connect streams (commands.connect to one background `sleep`) held by the shim
#      through the edge: VmRSS growth per stream, TCP connections used
#      vs. the same streams through the plain-HTTP sandbox listener (3101).
#
# Usage: bench/edge.sh [BUILD_DIR]   (as root; BUILD_DIR holds bin/cove, bin/cove-agent,
#        bin/cove-sandbox-init; default <repo>/build). Builds nothing.
# Env:   RUNS (200), DOWNLOAD_RUNS (3), DOWNLOAD_MIB (1024), STREAMS (1000), EDGE_H1 (1: also
#        measure 1. and 3. with http2 = false, restarting the shim; 0: skip), EDGE_PHASES (the
#        default "commands download streams"; a subset runs only those)
#
# Host resources it makes (and always removes again): state dir /var/tmp/cove-bench-edge.XXXXXX,
# `cove serve` on 127.0.0.1:3100/3101 (plain HTTP) and 127.0.0.1:8543 + [::1]:8543 (TLS, domain
# cove.localhost:8543), bridge cove-bench (10.86.0.0/16) and its rules in the COVE-* chains, the
# sandboxes it creates, a cove-agent on localhost:49983 in a throwaway sandbox (tests/e2e/sandbox.sh),
# the TLS download baseline on an ephemeral loopback port.
# Env TLS_BASELINE: path of cove-bench-tls-download-baseline (default BUILD_DIR/bin/...).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
repo=$(cd "$here/.." && pwd)
build=${1:-$repo/build}
runs=${RUNS:-200}
download_runs=${DOWNLOAD_RUNS:-3}
download_mib=${DOWNLOAD_MIB:-1024}
streams=${STREAMS:-1000}
edge_h1=${EDGE_H1:-1}
phases=" ${EDGE_PHASES:-commands download streams} "
api_port=3100
sandbox_port=3101
tls_port=8543
agent_port=49983
domain=cove.localhost:$tls_port
bridge="cove-bench"
subnet=10.86.0.0/16

log() { printf 'bench-edge: [%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

((EUID == 0)) || die "must run as root (the shim makes containers, a bridge and iptables rules)"
for n in "$runs" "$download_runs" "$download_mib" "$streams"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "RUNS, DOWNLOAD_RUNS, DOWNLOAD_MIB and STREAMS must be positive integers"
done
[[ $edge_h1 == 0 || $edge_h1 == 1 ]] || die "EDGE_H1 must be 0 or 1"
[[ -d $build ]] || die "build dir not found: $build"
build=$(cd "$build" && pwd)
cove=$build/bin/cove
for b in cove cove-agent cove-sandbox-init; do
  [[ -x $build/bin/$b ]] || die "$build/bin/$b not found or not executable (build first, or pass the build dir)"
done
tls_baseline=${TLS_BASELINE:-$build/bin/cove-bench-tls-download-baseline}
[[ -x $tls_baseline ]] || die "$tls_baseline not found (build the cove-bench-tls-download-baseline target, or set TLS_BASELINE)"
for tool in node curl openssl ip iptables ss setsid findmnt losetup timeout; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
curl -V | grep -q '^Features:.*HTTP2' || die "this curl has no HTTP/2 support"
# The SDK and curl find <port>-<id>.cove.localhost through nss-myhostname (machine.md §6).
getent hosts "49983-x.${domain%%:*}" >/dev/null ||
  die "*.${domain%%:*} does not resolve: add 'myhostname' to the hosts: line of /etc/nsswitch.conf (libnss-myhostname)"
[[ -d $repo/tests/e2e/node_modules/e2b ]] || (cd "$repo/tests/e2e" && npm ci --no-audit --no-fund --silent)

rootfs=$("$repo/rootfs-builder/build-base.sh")
[[ -d $rootfs ]] || die "build-base.sh printed no rootfs directory: '$rootfs'"

refuse_if_busy "$api_port" "$sandbox_port" "$tls_port" "$agent_port"

state=$(mktemp -d /var/tmp/cove-bench-edge.XXXXXX)
config=$state/cove.toml
direct=$state/direct   # tests/e2e/sandbox.sh state of the debug-mode agent
idle_fd=   # stdout of the TLS download baseline (its port)
shim_pid=
shim_start_time=
started=$SECONDS


# Kills what the shim still runs, then stops the shim (it leaves sandboxes running when it stops).
stop_shim() {
  local id ok=0
  shim_alive || return 0
  for id in $(live_sandboxes); do
    "$cove" sandbox kill "$id" --config "$config" >/dev/null 2>>"$state/cli.log" || { log "cove sandbox kill $id failed"; ok=1; }
  done
  [[ -z $(live_sandboxes) ]] || { log "sandboxes still listed after kill"; ok=1; }
  kill -TERM "$shim_pid"
  for _ in $(seq 50); do shim_alive || break; sleep 0.1; done
  shim_alive && { log "cove serve still running 5 s after SIGTERM; SIGKILL"; kill -KILL "$shim_pid"; sleep 0.5; }
  shim_pid=
  return "$ok"
}

cleanup() {
  local rc=$? dir id cg m dev back left=()
  trap - EXIT INT TERM
  set +e
  [[ -n $idle_fd ]] && exec {idle_fd}<&-
  [[ -d $direct ]] && { "$repo/tests/e2e/sandbox.sh" down "$direct" >/dev/null 2>&1 || { log "sandbox.sh down failed"; rc=1; }; }
  stop_shim || rc=1
  if ((rc != 0)) && [[ -f $state/shim.log ]]; then
    log "---- last 40 lines of the shim log"
    tail -n 40 "$state/shim.log" >&2
  fi
  kill_undestroyed_sandboxes "$state" || rc=1
  if [[ -f $config ]]; then
    "$cove" network down --config "$config" >/dev/null 2>>"$state/cli.log" || { log "cove network down failed"; rc=1; }
  fi
  if [[ $state == /var/tmp/cove-bench-edge.* && $state != *..* && -d $state ]]; then
    while read -r m; do umount -l "$m" 2>/dev/null; done < <(findmnt -rn -o TARGET | awk -v p="$state/" 'index($0, p) == 1' | sort -r)
    while read -r dev back; do
      [[ $back == "$state"/* ]] && { losetup -d "$dev" 2>/dev/null; left+=("loop device $dev"); }
    done < <(losetup -nO NAME,BACK-FILE 2>/dev/null)
    ip link show "$bridge" >/dev/null 2>&1 && left+=("bridge $bridge")
    remove_state_dir
  fi
  report_leftovers "cleanup: no sandbox, shim, agent, loop device, mount or bridge of this run is left" || rc=1
  log "total runtime $((SECONDS - started)) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

write_config() {
  cat >"$config" <<EOF
# Written by bench/edge.sh.
api_listen = ["127.0.0.1:$api_port"]
sandbox_listen = ["127.0.0.1:$sandbox_port"]
tls_listen = ["127.0.0.1:$tls_port", "[::1]:$tls_port"]
domain = "$domain"
http2 = $1
state_dir = "$state"
agent_path = "$build/bin/cove-agent"
max_timeout_s = 3600
max_sandboxes = 100
bridge = "$bridge"
subnet = "$subnet"
base_rootfs = "$rootfs"
EOF
}

# Own session, so a Ctrl-C of this script reaches the shim only through cleanup.
start_shim() {
  local from deadline
  write_config "$1"
  from=1
  [[ -f $state/shim.log ]] && from=$(($(wc -l <"$state/shim.log") + 1))
  setsid "$cove" serve --config "$config" </dev/null >>"$state/shim.log" 2>&1 &
  shim_pid=$!
  shim_start_time=$(start_time_of "$shim_pid")
  deadline=$((SECONDS + 30))
  until tail -n "+$from" "$state/shim.log" | grep -q '^cove: ready$'; do
    shim_alive || { tail -n 20 "$state/shim.log" >&2; die "cove serve exited before it was ready"; }
    ((SECONDS < deadline)) || die "cove serve printed no 'cove: ready' within 30 s"
    sleep 0.1
  done
}

write_config true
key=$("$cove" key create --team bench --config "$config" 2>>"$state/cli.log") || die "cove key create failed: $(tail -n 3 "$state/cli.log")"
[[ $key =~ ^[[:graph:]]+$ ]] || die "cove key create printed no single-line key"

# The SDK environments: the edge with only the three variables; the plain-HTTP listeners.
edge_env=(env -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DEBUG E2B_DOMAIN="$domain" E2B_API_KEY="$key" NODE_EXTRA_CA_CERTS="$state/ca.pem")
plain_env=(env -u E2B_DOMAIN -u E2B_DEBUG E2B_API_URL="http://127.0.0.1:$api_port" E2B_SANDBOX_URL="http://127.0.0.1:$sandbox_port" E2B_API_KEY="$key")
# The SDK holds one connection per open stream (HTTP/1.1, and h2 too: see edge-streams.mjs); its
# default pool of 200 would queue the rest until they time out.
h1_pool=E2B_ENVD_RPC_CONNECTIONS=$((streams + 50))

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start_shim true
[[ -f $state/ca.pem && -f $state/tls/edge.pem && -f $state/tls/edge.key ]] || die "the shim made no local CA and leaf in the state dir"
alpn=$(openssl s_client -connect "127.0.0.1:$tls_port" -servername "api.${domain%%:*}" -alpn h2,http/1.1 \
  -CAfile "$state/ca.pem" </dev/null 2>/dev/null | sed -n 's/^ALPN protocol: //p')
[[ $alpn == h2 ]] || die "the edge did not negotiate h2 over ALPN (got '${alpn:-none}')"
# The suite curl negotiates with the edge (both OpenSSL defaults); the baseline uses the same.
suite=$(curl -sv -o /dev/null --cacert "$state/ca.pem" "https://api.$domain/health" 2>&1 |
  sed -n 's/^\* SSL connection using TLSv1\.3 \/ \(TLS_[A-Z0-9_]*\).*/\1/p')
[[ -n $suite ]] || die "could not learn the TLS 1.3 suite the edge negotiates with curl"

# ---- 1. commands.run('true') --------------------------------------------------------------------
cmd_direct=null cmd_edge=null cmd_plain=null cmd_pair=null cmd_edge_h1=null download=null tls_runs=() streams_edge=null
streams_plain=null streams_edge_h1=null streams_edge_mux=null
want() { [[ $phases == *" $1 "* ]]; }
if want commands; then
log "1/3: commands.run('true') x $runs: debug mode against a cove-agent on localhost:$agent_port"
"$repo/tests/e2e/sandbox.sh" up "$rootfs" "$build/bin/cove-agent" "$direct" -port "$agent_port"
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$agent_port/health" && break; sleep 0.1; done
curl -sf -X POST -d '{"defaultUser":"user"}' "http://127.0.0.1:$agent_port/init" || die "the debug-mode agent did not answer /init"
cmd_direct=$(env -u E2B_DOMAIN -u E2B_API_URL -u E2B_SANDBOX_URL E2B_DEBUG=true node "$here/edge-commands.mjs" "$runs")
"$repo/tests/e2e/sandbox.sh" down "$direct"
log "1/3: commands.run('true') x $runs through the TLS edge (h2), then the plain-HTTP listeners"
cmd_edge=$("${edge_env[@]}" node "$here/edge-commands.mjs" "$runs")
cmd_plain=$("${plain_env[@]}" node "$here/edge-commands.mjs" "$runs")
log "1/3: commands.run('true') x $runs, the TLS edge and the plain-HTTP listeners alternating on one sandbox"
cmd_pair=$("${edge_env[@]}" COVE_PAIR_API_URL="http://127.0.0.1:$api_port" COVE_PAIR_SANDBOX_URL="http://127.0.0.1:$sandbox_port" \
  node "$here/edge-commands.mjs" "$runs")
fi

# ---- 2. download ---------------------------------------------------------------------------------
if want download; then
log "2/3: ${download_mib} MiB download x $download_runs (h1, h2, plain) and the TLS loopback baseline"
download=$("${edge_env[@]}" node "$here/edge-download.mjs" "$download_runs" "$download_mib" "$state/ca.pem" "http://127.0.0.1:$sandbox_port")
# Baseline: cove-bench-tls-download-baseline, a minimal blocking OpenSSL HTTPS server on loopback
# (the edge's certificate and key, TLS 1.3 with the suite the edge negotiated, 64 KiB SSL_writes of
# zeros), read with the same curl command: curl's and OpenSSL's own cost with nothing in between.
# (`openssl s_server` fed by a pipe was tried first: ~90 MiB/s, it reads stdin 16 KiB per select
# round, and with its default blocking I/O it stalls after the first record. No ceiling.)
exec {idle_fd}< <(timeout 600 "$tls_baseline" "$state/tls/edge.pem" "$state/tls/edge.key" "$suite" \
  "$((download_mib * 1048576))" "$((download_runs + 1))" 2>>"$state/tls-baseline.log")
read -r -t 30 baseline_port <&"$idle_fd" || die "the TLS download baseline did not start: $(cat "$state/tls-baseline.log")"
tls_download() {
  local code size speed version
  read -r code size speed version < <(curl -sS -o /dev/null -w '%{http_code} %{size_download} %{speed_download} %{http_version}\n' \
    --cacert "$state/ca.pem" --http1.1 -H 'Accept-Encoding: identity' \
    --resolve "api.${domain%%:*}:$baseline_port:127.0.0.1" "https://api.${domain%%:*}:$baseline_port/files")
  [[ $code == 200 && $size == "$((download_mib * 1048576))" && $version == 1.1 ]] ||
    die "TLS download baseline: status $code, $size bytes, HTTP/$version"
  node -e 'console.log((process.argv[1] / 1048576).toFixed(1))' "$speed"
}
tls_download >/dev/null # warm-up, as for the edge
tls_runs=()
for _ in $(seq "$download_runs"); do tls_runs+=("$(tls_download)"); done
exec {idle_fd}<&-
idle_fd=
fi

# ---- 3. idle streams -----------------------------------------------------------------------------
# A freshly started shim for each series, so one series' freed heap does not flatter the next.
if want streams; then
log "3/3: $streams idle streams through the edge (SDK, then node:http2 on one connection), then through the plain-HTTP listener"
stop_shim
start_shim true
streams_edge=$("${edge_env[@]}" "$h1_pool" node "$here/edge-streams.mjs" "$streams" "$shim_pid" "$tls_port")
stop_shim
start_shim true
streams_edge_mux=$("${edge_env[@]}" EDGE_STREAMS_H2=1 node "$here/edge-streams.mjs" "$streams" "$shim_pid" "$tls_port")
stop_shim
start_shim true
streams_plain=$("${plain_env[@]}" "$h1_pool" node "$here/edge-streams.mjs" "$streams" "$shim_pid" "$sandbox_port")
fi

# ---- http2 = false -------------------------------------------------------------------------------
if ((edge_h1)) && { want commands || want streams; }; then
  log "http2 = false: commands.run('true') x $runs and $streams idle streams through the edge over HTTP/1.1"
  stop_shim
  start_shim false
  alpn=$(openssl s_client -connect "127.0.0.1:$tls_port" -servername "api.${domain%%:*}" -alpn h2,http/1.1 \
    -CAfile "$state/ca.pem" </dev/null 2>/dev/null | sed -n 's/^ALPN protocol: //p')
  [[ $alpn == http/1.1 ]] || die "with http2 = false the edge negotiated '${alpn:-no ALPN}', not http/1.1"
  if want commands; then cmd_edge_h1=$("${edge_env[@]}" node "$here/edge-commands.mjs" "$runs"); fi
  if want streams; then
    streams_edge_h1=$("${edge_env[@]}" "$h1_pool" node "$here/edge-streams.mjs" "$streams" "$shim_pid" "$tls_port")
  fi
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
errors=$(grep -ciE 'error|exception|abort' "$state/shim.log" || true)

node -e '
  const [direct, edge, plain, edgeH1, dl, tlsRuns, sEdge, sPlain, sEdgeH1, suite, errors, loadStart, loadEnd, sEdgeMux, pairJson] = process.argv.slice(1)
  const d = JSON.parse(direct), e = JSON.parse(edge), p = JSON.parse(plain), eh1 = JSON.parse(edgeH1), pr = JSON.parse(pairJson)
  const j = JSON.parse(dl), se = JSON.parse(sEdge), sp = JSON.parse(sPlain), sh1 = JSON.parse(sEdgeH1), sm = JSON.parse(sEdgeMux)
  const f = (x, n = 3) => Number(x).toFixed(n)
  const row = (name, v, base, unit, n = 3) =>
    console.log(`${name.padEnd(34)} ${f(v, n).padStart(9)} ${unit}   baseline ${f(base, n).padStart(9)} ${unit}   ratio ${f(v / base, 2)}`)
  if (e) {
  console.log(`commands.run("true"), ${e.runs} runs: npm SDK through the TLS edge vs. the SDK in debug mode against a cove-agent on localhost:49983`)
  row("edge (h2) p50", e.p50_ms, d.p50_ms, "ms")
  row("edge (h2) p99", e.p99_ms, d.p99_ms, "ms")
  console.log(`edge overhead at p50: ${f(e.p50_ms - d.p50_ms)} ms (target ≤ 1 ms)`)
  row("plain-HTTP listeners p50", p.p50_ms, d.p50_ms, "ms")
  console.log(`  TLS + h2 share (edge − plain-HTTP listeners) at p50: ${f(e.p50_ms - p.p50_ms)} ms`)
  if (pr) {
    row("alternating: edge (h2) p50", pr.p50_ms, pr.pair_p50_ms, "ms")
    console.log(`  edge share, alternating runs on one sandbox (median of edge − plain per pair): ${f(pr.paired_difference_p50_ms)} ms (target ≤ 1 ms; baseline = the same sandbox through the plain-HTTP listeners)`)
  }
  if (eh1) {
    row("edge, http2 = false, p50", eh1.p50_ms, d.p50_ms, "ms")
    console.log(`  edge overhead at p50 over HTTP/1.1: ${f(eh1.p50_ms - d.p50_ms)} ms`)
  }
  }
  if (j) {
  const tls = tlsRuns.trim().split(/\s+/).map(Number)
  const tlsMedian = [...tls].sort((a, b) => a - b)[Math.floor(tls.length / 2)]
  console.log(`${j.mib} MiB GET /files (identity, fallocated file) through the edge with curl, median of ${j.runs}, vs. the same curl against a minimal OpenSSL HTTPS server on loopback (TLS 1.3 ${suite}), median of ${tls.length}`)
  row("edge HTTP/1.1", j.h1_mib_s.median, tlsMedian, "MiB/s", 1)
  row("edge h2", j.h2_mib_s.median, tlsMedian, "MiB/s", 1)
  console.log(`  target ≥ 70 % of the baseline; runs: h1 ${j.h1_mib_s.all.join(", ")}; h2 ${j.h2_mib_s.all.join(", ")}; baseline ${tls.join(", ")} MiB/s`)
  console.log(`  plain-HTTP sandbox listener (no TLS): ${j.plain_h1_mib_s.median} MiB/s (runs ${j.plain_h1_mib_s.all.join(", ")}); sandbox disk size/avail MB: ${j.disk_size_avail_mb}`)
  }
  if (se) {
  const sline = (name, s) => console.log(`${s.failure ? `FAILED after ${s.opened} of ${s.streams} streams opened: ${s.failure}\n` : ""}${name.padEnd(34)} ${f(s.kib_per_stream, 1).padStart(9)} KiB/stream   shim VmRSS ${s.rss_before_kib} → ${s.rss_open_kib} KiB (${s.rss_closed_kib} after closing), fds ${s.fds_before} → ${s.fds_open} → ${s.fds_closed}, TCP connections ${s.connections_open}, opened in ${s.open_s} s`)
  console.log(`${se.streams} idle Connect streams (commands.connect to one background sleep), each series on a fresh shim: shim VmRSS growth per stream`)
  sline("edge, SDK (h2 ALPN)", se)
  sline("edge, node:http2, 1 connection", sm)
  sline("plain-HTTP listener (baseline)", sp)
  if (sh1) sline("edge, http2 = false", sh1)
  console.log(`  the SDK (undici 7) sends no POST beside another on one connection, h2 or not: one TCP connection per stream`)
  console.log(`  edge share, SDK: ${f(se.kib_per_stream - sp.kib_per_stream, 1)} KiB/stream over the plain-HTTP proxy (ratio ${f(se.kib_per_stream / sp.kib_per_stream, 2)}); multiplexed: ${f(sm.kib_per_stream - sp.kib_per_stream, 1)} KiB/stream (ratio ${f(sm.kib_per_stream / sp.kib_per_stream, 2)})`)
  } else if (sh1) sline("edge, http2 = false", sh1)
  console.log(`load average (1/5/15 min) at the start ${loadStart}, at the end ${loadEnd} on ${require("os").cpus().length} CPUs: figures from a busy host are noisy`)
  if (+errors) console.log(`NOTE: the shim log has ${errors} lines mentioning error/exception/abort (see the run log)`)
' "$cmd_direct" "$cmd_edge" "$cmd_plain" "$cmd_edge_h1" "$download" "${tls_runs[*]}" \
  "$streams_edge" "$streams_plain" "$streams_edge_h1" "$suite" "$errors" "$load_start" "$load_end" "$streams_edge_mux" "$cmd_pair"
if ((errors)); then
  log "---- shim log lines mentioning error/exception/abort (first 20)"
  grep -iE 'error|exception|abort' "$state/shim.log" | head -n 20 >&2
fi
exit 0
