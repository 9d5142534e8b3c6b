// Shared helpers for the host-shim end-to-end tests (run by tests/e2e/shim/run.sh).
//
// Unlike ../*.test.mjs these do NOT use debug mode: the SDK talks to `cove serve` with a real API
// key, and every sandbox is a real container. Two client setups (run.sh picks one per phase):
//   plain  E2B_API_URL (control plane) and E2B_SANDBOX_URL (data plane), plain HTTP;
//   TLS    only E2B_DOMAIN, E2B_API_KEY and NODE_EXTRA_CA_CERTS, as a user of the TLS edge has:
//          https://api.<domain> and https://<port>-<id>.<domain> (tls*.test.mjs). Every sandbox a test makes goes through `track()` so that
// `killTracked()` (an after() hook in each file) removes it even when the test failed.
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { networkInterfaces } from 'node:os'

import { Sandbox } from 'e2b'
import { pollUntil } from '../helpers.mjs'

export { sleep, pollUntil, settleWithin } from '../helpers.mjs'

/** A fresh tag per test process, for metadata that no other run or file shares. */
export const RUN_ID = `e2e-${process.pid}-${randomBytes(4).toString('hex')}`

/** Per-test timeouts (ms). Sandbox creation is a container start: allow it some seconds. */
export const T = { timeout: 90_000 }
export const T_LONG = { timeout: 240_000 }

/** Environment exported by run.sh; fails the test (not the file) if it is missing. */
export function env(name) {
  const v = process.env[name]
  assert.ok(v, `${name} must be set (run the suite through tests/e2e/shim/run.sh)`)
  return v
}

/** True when this process is a client of the TLS edge (run.sh sets E2B_DOMAIN only then). */
export const TLS_CLIENT = Boolean(process.env.E2B_DOMAIN)

function checkEnv() {
  assert.notEqual(
    String(process.env.E2B_DEBUG ?? '').toLowerCase(),
    'true',
    'E2B_DEBUG must not be set: these tests go through the shim, not straight to an agent',
  )
  env('E2B_API_KEY')
  if (TLS_CLIENT) {
    // Nothing may steer the SDK away from https://api.<domain> and https://<port>-<id>.<domain>.
    for (const name of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_DEBUG']) {
      assert.equal(process.env[name], undefined, `${name} must not be set for a TLS-edge client`)
    }
    env('NODE_EXTRA_CA_CERTS')
  } else {
    env('E2B_API_URL')
    env('E2B_SANDBOX_URL')
  }
}

const tracked = new Set()

/** Remember a sandbox id so killTracked() removes it. Returns its argument. */
export function track(sbxOrId) {
  tracked.add(typeof sbxOrId === 'string' ? sbxOrId : sbxOrId.sandboxId)
  return sbxOrId
}

/** Sandbox.create(opts) through the shim, tracked. Failures name the options used. */
export async function newSandbox(opts = {}) {
  checkEnv()
  const { template, ...rest } = opts
  let sbx
  try {
    sbx = template ? await Sandbox.create(template, rest) : await Sandbox.create(rest)
  } catch (e) {
    throw new assert.AssertionError({
      message: `Sandbox.create(${template ? `'${template}', ` : ''}${JSON.stringify(rest)}) failed: ${e?.name}: ${e?.message}`,
    })
  }
  track(sbx)
  assert.match(sbx.sandboxId, /^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'sandbox id')
  assert.notEqual(sbx.sandboxId, 'debug_sandbox_id', 'the SDK is in debug mode')
  if (TLS_CLIENT) {
    // The create response's `domain` is the configured one (with its port), so the SDK's envd
    // traffic goes to https://49983-<id>.<domain> (envdApiUrl is private in the typings only).
    const domain = env('E2B_DOMAIN')
    assert.equal(sbx.sandboxDomain, domain, 'sandboxDomain (the create response\'s domain)')
    assert.equal(sbx.envdApiUrl, `https://49983-${sbx.sandboxId}.${domain}`, 'the SDK\'s envd URL')
  }
  return sbx
}

/** Kills every tracked sandbox that is still alive (after hooks). Never throws. */
export async function killTracked() {
  const ids = [...tracked]
  tracked.clear()
  await Promise.all(ids.map((id) => Sandbox.kill(id).catch(() => false)))
}

/** Run a command that must succeed; return its stdout with trailing newlines removed. */
export async function sh(sbx, cmd, opts = {}) {
  let r
  try {
    r = await sbx.commands.run(cmd, { timeoutMs: 30_000, ...opts })
  } catch (e) {
    const detail = e?.exitCode !== undefined ? ` (exit ${e.exitCode}; stdout ${JSON.stringify(e.stdout)}; stderr ${JSON.stringify(e.stderr)})` : ''
    throw new assert.AssertionError({ message: `command ${JSON.stringify(cmd)} failed: ${e?.name}: ${e?.message}${detail}` })
  }
  return r.stdout.replace(/\n+$/, '')
}

/**
 * Run `cmd` (which may fail) and return {exitCode, stdout, stderr}: a CommandExitError becomes
 * its exit code; any other error is rethrown.
 */
export async function shStatus(sbx, cmd, opts = {}) {
  try {
    const r = await sbx.commands.run(cmd, { timeoutMs: 30_000, ...opts })
    return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }
  } catch (e) {
    if (e?.name === 'CommandExitError' || typeof e?.exitCode === 'number') {
      return { exitCode: e.exitCode, stdout: e.stdout, stderr: e.stderr }
    }
    throw e
  }
}

/**
 * Await a promise that must reject with an instance of `Class`; returns the error.
 * `what` describes the call for the failure message.
 */
export async function rejectsWith(promise, Class, what) {
  let value
  try {
    value = await promise
  } catch (e) {
    assert.ok(
      e instanceof Class,
      `${what}: expected ${Class.name}, got ${e?.constructor?.name ?? typeof e}: ${e?.message}`,
    )
    return e
  }
  assert.fail(`${what}: expected ${Class.name}, but it resolved with ${safeJson(value)}`)
}

function safeJson(v) {
  try {
    return JSON.stringify(v)?.slice(0, 300)
  } catch {
    return String(v)
  }
}

/** The sandbox's eth0 IPv4 address (no prefix), or '' without one. */
export async function eth0Address(sbx) {
  const out = await sh(sbx, "ip -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}' | cut -d/ -f1 || true")
  return out.trim()
}

/**
 * curl from inside a sandbox. Returns {ok, code, body, rc, ms}: `ok` when curl exited 0; `code`
 * is the HTTP status ('000' without a response); `ms` the wall time inside the sandbox.
 */
export async function curlFrom(sbx, url, { maxTime = 3, user } = {}) {
  assert.ok(!/['\\]/.test(url), 'url must not contain quotes or backslashes')
  const script =
    `t=$(mktemp); s=$(date +%s%N); body=$(curl -sS -m ${maxTime} -w '\\n%{http_code}' '${url}' 2>"$t"); rc=$?; ` +
    `e=$(date +%s%N); printf '%s\\n' "$body"; echo "rc=$rc ms=$(( (e - s) / 1000000 ))"; cat "$t"; rm -f "$t"`
  const out = await sh(sbx, script, { timeoutMs: (maxTime + 20) * 1000, ...(user ? { user } : {}) })
  const m = /\n?(\d{3})\nrc=(\d+) ms=(\d+)\n?([\s\S]*)$/.exec(out)
  assert.ok(m, `unexpected curl wrapper output: ${JSON.stringify(out)}`)
  const body = out.slice(0, m.index)
  return { ok: m[2] === '0', code: m[1], rc: Number(m[2]), ms: Number(m[3]), body, err: m[4].trim() }
}

/** The host's non-loopback IPv4 addresses (every interface, the shim's bridge included). */
export function hostIPv4Addresses() {
  const out = []
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) out.push(a.address)
  }
  return [...new Set(out)]
}

/** Run the cove CLI with the suite's config; returns stdout. */
export function cove(...args) {
  return execFileSync(env('COVE_BIN'), [...args, '--config', env('COVE_CONFIG')], {
    encoding: 'utf8',
    timeout: 30_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/** The ids `cove sandbox list` shows (every team's live sandboxes). */
export function coveSandboxIds() {
  return cove('sandbox', 'list')
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/)[0])
    .filter(Boolean)
}

// ---- Pause, resume, snapshots and fork (tls_pause, tls_snapshots) ----------------------------
// A background counter whose own history tells whether it ran, stood still or was replaced: each
// tick appends "<n> <unix ms>" to COUNTER_LOG, with n kept in the shell's memory. Contiguous n
// across a pause means the same process (its memory) came back; a fresh process would restart
// at 1; no tick stamped inside the paused window means it did not run while paused (the
// sandbox's clock is the host's realtime clock, the same as Date.now() here).

/** Where the counter appends its ticks. */
export const COUNTER_LOG = '/home/user/counter.log'

/** The counter's command line (commands.list() shows it as the last of its args). */
export const COUNTER_SCRIPT = `i=0; while :; do i=$((i+1)); echo "$i $(date +%s%3N)" >> ${COUNTER_LOG}; sleep 0.5; done`

/** The counter's ticks so far, [{n, ms}] in file order (a line being appended is left out). */
export async function readTicks(sbx) {
  const text = await sbx.files.read(COUNTER_LOG, { requestTimeoutMs: 30_000 })
  const lines = text.split('\n')
  lines.pop() // '' after the last newline, or a line still being written
  return lines
    .filter((l) => /^\d+ \d+$/.test(l))
    .map((l) => {
      const [n, ms] = l.split(' ').map(Number)
      return { n, ms }
    })
}

/** Starts the counter in the background; resolves its pid once it has ticked twice. */
export async function startCounter(sbx) {
  const handle = await sbx.commands.run(COUNTER_SCRIPT, { background: true, timeoutMs: 0 })
  // The process goes on; only the SDK's output stream (which a pause would cut) is dropped.
  await handle.disconnect()
  await pollUntil(() => sh(sbx, `grep -c . ${COUNTER_LOG} 2>/dev/null || true`), (c) => Number(c) >= 2, {
    timeoutMs: 10_000,
    intervalMs: 200,
    what: 'the counter ticked twice',
  })
  return handle.pid
}

/** Pids of the processes the agent lists as running the counter. */
export async function counterPids(sbx) {
  const procs = await sbx.commands.list({ requestTimeoutMs: 30_000 })
  return procs.filter((p) => p.args?.at(-1) === COUNTER_SCRIPT).map((p) => p.pid)
}

/** Asserts ticks are 1, 2, 3, … with no gap or restart (one process, its memory intact). */
export function assertContiguous(ticks, what) {
  assert.ok(ticks.length > 0, `${what}: no ticks`)
  const bad = ticks.findIndex((t, i) => t.n !== i + 1)
  assert.equal(bad, -1, `${what}: tick ${bad} is n=${ticks[bad]?.n}, expected ${bad + 1} (${JSON.stringify(ticks.slice(Math.max(0, bad - 2), bad + 3))})`)
}

/**
 * Asserts the counter did not tick between `fromMs` (the pause had answered) and `toMs` (the
 * resume was asked for), a window of at least `minWindowMs` so that a running counter (a tick
 * every 0.5 s) would have ticked several times in it.
 */
export function assertNoTicksWhilePaused(ticks, fromMs, toMs, what, minWindowMs = 2_500) {
  assert.ok(toMs - fromMs >= minWindowMs, `${what}: paused window of ${toMs - fromMs} ms is too short to tell`)
  const slack = 100
  const during = ticks.filter((t) => t.ms > fromMs + slack && t.ms < toMs - slack)
  assert.deepEqual(during, [], `${what}: the counter ticked while paused (${new Date(fromMs).toISOString()} .. ${new Date(toMs).toISOString()})`)
}

/** Resolves the ticks once the counter has ticked `more` times past tick `n` (it runs). */
export async function waitForTicksPast(sbx, n, what, more = 2) {
  return pollUntil(() => readTicks(sbx), (t) => t.length > 0 && t.at(-1).n >= n + more, {
    timeoutMs: 10_000,
    intervalMs: 250,
    what: `${what}: the counter ticks on past ${n}`,
  })
}

/**
 * `cove sandbox <args...> --config <COVE_CONFIG>` without throwing: {status, stdout, stderr}
 * (status null when it was killed by the timeout).
 */
export async function coveStatus(args, timeoutMs = 120_000) {
  return new Promise((resolve) => {
    execFile(env('COVE_BIN'), [...args, '--config', env('COVE_CONFIG')], { encoding: 'utf8', timeout: timeoutMs }, (err, stdout, stderr) => {
      resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr })
    })
  })
}

/**
 * Forces a paused sandbox to the cold tier: `cove sandbox checkpoint <id>` answers once it is
 * checkpointed to disk and its processes are gone.
 */
export async function checkpointToDisk(id) {
  const r = await coveStatus(['sandbox', 'checkpoint', id])
  assert.equal(r.status, 0, `cove sandbox checkpoint ${id} failed (exit ${r.status}): ${r.stderr.trim() || r.stdout.trim()}`)
}
