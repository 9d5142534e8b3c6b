#!/usr/bin/env bash
# Benchmarks with their same-run limit baselines. Not part of `make test`: targets live here.
#   commands.run('true') via the npm SDK vs. one HTTP request + posix_spawn(/bin/true)
#   agent RSS idle and with 100 live processes
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-500}

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
# The agent is PID 1 of the sandbox's pid namespace; find its host pid for RSS.
agent_pid=$(pgrep -f -n '^/usr/local/bin/cove-agent')

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
