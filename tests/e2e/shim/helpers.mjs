// Shared helpers for the host-shim end-to-end tests (run by tests/e2e/shim/run.sh).
//
// Unlike ../*.test.mjs these do NOT use debug mode: the SDK talks to `cove serve` with a real API
// key, and every sandbox is a real container. Two client setups (run.sh picks one per phase):
//   plain  E2B_API_URL (control plane) and E2B_SANDBOX_URL (data plane), plain HTTP;
//   TLS    only E2B_DOMAIN, E2B_API_KEY and NODE_EXTRA_CA_CERTS, as a user of the TLS edge has:
//          https://api.<domain> and https://<port>-<id>.<domain> (tls*.test.mjs). Every sandbox a test makes goes through `track()` so that
// `killTracked()` (an after() hook in each file) removes it even when the test failed.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { networkInterfaces } from 'node:os'

import { Sandbox } from 'e2b'

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
