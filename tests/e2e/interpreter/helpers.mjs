// Shared helpers for the code-interpreter end-to-end tests (run by tests/e2e/interpreter/run.sh).
//
// The tests use the unchanged npm `@e2b/code-interpreter` (pinned in ../package.json) against a
// running Cove shim, wherever the environment points the SDK:
//   TLS edge    E2B_DOMAIN, E2B_API_KEY, NODE_EXTRA_CA_CERTS (what `make up` writes to client.env):
//               the :49999 server is https://49999-<id>.<domain>
//   plain HTTP  E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY: one URL for envd and :49999, routed by
//               the E2b-Sandbox-Id / E2b-Sandbox-Port headers
// Sandboxes come from the SDK's default template, code-interpreter-v1.
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'

import { Sandbox } from '@e2b/code-interpreter'

export { sleep }

export const PORT = 49999
/** Per-test options for node:test. */
export const T = { timeout: 60_000 }

/**
 * Memoise an async setup. Tests call the result instead of using a before() hook: a failing hook
 * only marks tests cancelled, while an error raised inside each test fails every test needing it.
 */
export function lazy(fn) {
  let promise
  return () => (promise ??= fn())
}

function checkEnv() {
  assert.notEqual(String(process.env.E2B_DEBUG ?? '').toLowerCase(), 'true', 'E2B_DEBUG must not be set')
  assert.ok(process.env.E2B_API_KEY, 'E2B_API_KEY must be set (run through tests/e2e/interpreter/run.sh)')
  assert.ok(
    process.env.E2B_DOMAIN || (process.env.E2B_API_URL && process.env.E2B_SANDBOX_URL),
    'set E2B_DOMAIN (TLS edge) or E2B_API_URL and E2B_SANDBOX_URL (plain HTTP)',
  )
}

const created = new Set()

/** Sandbox.create(opts) of code-interpreter-v1; killed by killAll() (an after() hook). */
export async function newSandbox(opts = {}) {
  checkEnv()
  let sbx
  try {
    sbx = await Sandbox.create({ timeoutMs: 600_000, ...opts })
  } catch (e) {
    throw new assert.AssertionError({ message: `Sandbox.create(${JSON.stringify(opts)}) failed: ${e?.name}: ${e?.message}` })
  }
  created.add(sbx)
  return sbx
}

/** Kills every sandbox newSandbox made. Never throws. */
export async function killAll() {
  const all = [...created]
  created.clear()
  await Promise.all(all.map((s) => s.kill().catch(() => false)))
}

/**
 * A raw request to the sandbox's :49999 server, where the SDK cannot express the case:
 * E2B_SANDBOX_URL with the routing headers when it is set, else https://<getHost(49999)>.
 * `path` may carry a query string. Adds the traffic token when the sandbox has one.
 */
export async function rawFetch(sbx, path, init = {}) {
  const base = process.env.E2B_SANDBOX_URL
  const url = base ? `${base.replace(/\/+$/, '')}${path}` : `https://${sbx.getHost(PORT)}${path}`
  const headers = { ...(init.headers ?? {}) }
  if (base) Object.assign(headers, { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': String(PORT) })
  if (sbx.trafficAccessToken) headers['E2B-Traffic-Access-Token'] = sbx.trafficAccessToken
  return fetch(url, { signal: AbortSignal.timeout(30_000), ...init, headers })
}

/** POST a JSON (or raw string) body to path; returns {status, headers, text}. */
export async function rawPost(sbx, path, body, headers = {}) {
  const res = await rawFetch(sbx, path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

/** Await a promise that must reject with an instance of `Class`; returns the error. */
export async function rejectsWith(promise, Class, what) {
  let value
  try {
    value = await promise
  } catch (e) {
    assert.ok(e instanceof Class, `${what}: expected ${Class.name}, got ${e?.constructor?.name ?? typeof e}: ${e?.message}`)
    return e
  }
  assert.fail(`${what}: expected ${Class.name}, but it resolved with ${safeJson(value)}`)
}

/** The execution must have no error; the message shows the error when it has one. */
export function noError(execution, what) {
  assert.equal(execution.error, undefined, `${what}: unexpected error ${safeJson(execution.error)}`)
  return execution
}

export function safeJson(v) {
  try {
    return JSON.stringify(v)?.slice(0, 500)
  } catch {
    return String(v)
  }
}

/** Wall time of an async call in ms, with its value. */
export async function timed(fn) {
  const t0 = performance.now()
  const value = await fn()
  return { ms: performance.now() - t0, value }
}
