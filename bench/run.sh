#!/usr/bin/env bash
# Benchmarks with their same-run limit baselines. Not part of `make test`: targets live here.
#   commands.run('true') via the npm SDK vs. one HTTP request + posix_spawn(/bin/true)
#   agent RSS idle and with 100 live processes
#   files.write/read of 4 MiB and 4 KiB via the SDK vs. the same bytes over one HTTP request to a
#   handler that writes them to disk (inside the sandbox); a 1 GiB streamed upload's throughput and
#   the agent's peak RSS (FILES_RUNS, default 50; LARGE_MIB, default 1024)
#   sandbox creation (bench/sandboxes.sh), the TLS edge (bench/edge.sh) and template builds
#   (bench/templates.sh), each with its own shim
#   pause/resume (bench/pause.sh, its own shim): warm and cold (CRIU) pause/resume, create from a snapshot
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-500}
files_runs=${FILES_RUNS:-50}
large_mib=${LARGE_MIB:-1024}

rootfs=$(rootfs-builder/build-base.sh)
[ -d tests/e2e/node_modules ] || (cd tests/e2e && npm ci --no-audit --no-fund --silent)
state=$(mktemp -d /tmp/cove-bench.XXXXXX)
trap 'tests/e2e/sandbox.sh down "$state" >/dev/null 2>&1 || true' EXIT
tests/e2e/sandbox.sh up "$rootfs" build/bin/cove-agent "$state" -port 49983
for _ in $(seq 100); do
  curl -sf -o /dev/null http://127.0.0.1:49983/health && break
  sleep 0.1
done
curl -sf -X POST -d '{"defaultUser":"user"}' http://127.0.0.1:49983/init
# The agent is PID 1 of the sandbox's pid namespace; sandbox.sh records its host pid.
agent_pid=$(<"$state/pid")

baseline=$(build/bin/cove-bench-baseline "$runs")
# The same floor inside the sandbox for the command the SDK really runs (a login bash), so the
# agent's own share is visible.
cp build/bin/cove-bench-baseline "/proc/$agent_pid/root/tmp/cove-bench-baseline"
bash_baseline=$(nsenter -t "$agent_pid" -m -p -r -w -- /tmp/cove-bench-baseline "$runs" /bin/bash -l -c true)
sdk=$(E2B_DEBUG=true node bench/commands-run.mjs "$runs" "$agent_pid")

node -e '
const b = JSON.parse(process.argv[1]), s = JSON.parse(process.argv[2]), bb = JSON.parse(process.argv[3])
const row = (name, v, base, unit) => console.log(`${name.padEnd(34)} ${String(v).padStart(9)} ${unit}   baseline ${String(base).padStart(9)} ${unit}   ratio ${(v / base).toFixed(2)}`)
console.log(`commands.run("true"), ${s.runs} runs (SDK debug mode) vs. HTTP request + posix_spawn(/bin/true)`)
row("p50", s.p50_ms, b.p50_ms, "ms")
row("p99", s.p99_ms, b.p99_ms, "ms")
console.log(`Process.Start of /bin/true over Connect JSON (fetch, no SDK, no bash) vs. the same baseline`)
row("p50", s.raw_start_p50_ms, b.p50_ms, "ms")
row("p99", s.raw_start_p99_ms, b.p99_ms, "ms")
console.log(`POST /init p50 ${s.init_p50_ms} ms (budget 50 ms)   beside GET /health p50 ${s.health_p50_ms} ms   ratio ${(s.init_p50_ms / s.health_p50_ms).toFixed(2)}`)
console.log(`agent RSS idle                     ${s.agent_rss_idle_kib} KiB (target <= 2048 KiB)`)
console.log(`agent RSS with 100 live processes  ${s.agent_rss_100_processes_kib} KiB`)
console.log(`same floor inside the sandbox for /bin/bash -l -c true (what the SDK runs): p50 ${bb.p50_ms} ms, p99 ${bb.p99_ms} ms; SDK p50 ratio ${(s.p50_ms / bb.p50_ms).toFixed(2)}`)
' "$baseline" "$sdk" "$bash_baseline"

# Files: the floor runs inside the sandbox, on the filesystem the agent writes to (/home/user).
cp build/bin/cove-bench-files-baseline "/proc/$agent_pid/root/tmp/cove-bench-files-baseline"
mkdir -p "/proc/$agent_pid/root/home/user/.cove-bench-baseline"
files_baseline=$(nsenter -t "$agent_pid" -m -p -r -w -- /tmp/cove-bench-files-baseline \
  /home/user/.cove-bench-baseline "$files_runs" "$large_mib")
rmdir "/proc/$agent_pid/root/home/user/.cove-bench-baseline"
files=$(E2B_DEBUG=true node bench/files.mjs "$files_runs" "$agent_pid" "$large_mib")

node -e '
const b = JSON.parse(process.argv[1]), s = JSON.parse(process.argv[2])
const row = (name, v, base, unit) => console.log(`${name.padEnd(34)} ${String(v).padStart(9)} ${unit}   baseline ${String(base).padStart(9)} ${unit}   ratio ${(v / base).toFixed(2)}`)
console.log(`files via the SDK, p50 of ${s.runs} runs, vs. the same bytes over one HTTP request to a handler writing/reading a file`)
row("files.write 4 MiB", s.write_4m_p50_ms, b.write_4m_p50_ms, "ms")
row("files.read 4 MiB (SDK: gzip)", s.read_4m_p50_ms, b.read_4m_p50_ms, "ms")
row("GET /files 4 MiB, identity", s.read_4m_identity_p50_ms, b.read_4m_p50_ms, "ms")
row("files.write 4 KiB", s.write_4k_p50_ms, b.write_4k_p50_ms, "ms")
console.log(`files.write ${s.large_mib} MiB stream: ${s.large_upload_s} s, ${s.large_upload_mib_s} MiB/s   baseline ${b.large_upload_mib_s} MiB/s   ratio ${(b.large_upload_mib_s / s.large_upload_mib_s).toFixed(2)}`)
console.log(`agent RSS during it: ${s.agent_rss_before_kib} KiB before, ${s.agent_rss_peak_kib} KiB peak (+${s.agent_rss_peak_kib - s.agent_rss_before_kib} KiB); VmHWM ${s.agent_hwm_kib} KiB`)
' "$files_baseline" "$files"

# Sandbox creation (its own shim on 127.0.0.1:3100/3101, bridge cove-bench): latency, throughput, memory.
bench/sandboxes.sh build

# TLS edge (its own shim on 127.0.0.1:3100/3101 and :8543, bridge cove-bench, and its own agent on
# localhost:49983, so ours goes first): commands.run overhead, 1 GiB download, idle streams.
tests/e2e/sandbox.sh down "$state" >/dev/null
bench/edge.sh build

# Template builds (its own shim on 127.0.0.1:3102/3103, bridge cove-bench-t, a fresh layers_dir):
# base from scratch and from cache, one-step templates through the SDK, layer sharing.
bench/templates.sh build

# Pause/resume (its own shim on 127.0.0.1:3110/3111, bridge cove-bpause): warm pause/resume vs. the
# cgroup freezer, cold pause/resume vs. raw criu dump/restore, create from a snapshot vs. plain create.
bench/pause.sh build
