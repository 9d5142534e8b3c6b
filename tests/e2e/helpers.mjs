// Shared helpers for the Cove end-to-end tests (run by tests/e2e/run.sh).
//
// The tests drive the agent through the unchanged npm `e2b` SDK in debug mode
// (E2B_DEBUG=true): Sandbox.create() makes no HTTP call and points every envd
// request at http://localhost:49983, where run.sh has started the agent and
// already sent the orchestrator's POST /init.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

import { Sandbox } from 'e2b'
import { createFileRegistry, fromBinary } from '@bufbuild/protobuf'
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt'

export { sleep }

export const AGENT_URL = 'http://127.0.0.1:49983'

/** Per-test timeout (ms) for node:test; the whole suite must stay well under ~2 minutes. */
export const TEST_TIMEOUT = 30_000

/**
 * Memoise an async setup function. Tests call the result instead of using a before() hook:
 * a failing hook only marks tests "cancelled" (not counted in `# fail`), while a setup error
 * raised inside each test fails every test that needs it.
 */
export function lazy(fn) {
  let promise
  return () => (promise ??= fn())
}

/** A Sandbox handle in debug mode. Refuses to run against anything but the local agent. */
export async function createSandbox() {
  assert.equal(
    String(process.env.E2B_DEBUG).toLowerCase(),
    'true',
    'E2B_DEBUG=true must be set (run the suite through tests/e2e/run.sh)',
  )
  for (const v of ['E2B_SANDBOX_URL', 'E2B_API_URL']) {
    assert.ok(!process.env[v], `${v} must not be set: it would redirect the SDK away from the local agent`)
  }
  const sbx = await Sandbox.create()
  assert.equal(sbx.sandboxId, 'debug_sandbox_id', 'SDK is not in debug mode')
  return sbx
}

/** Run a command that must succeed; return its stdout with the trailing newline(s) removed. */
export async function sh(sbx, cmd, opts = {}) {
  const r = await sbx.commands.run(cmd, { timeoutMs: 20_000, ...opts })
  return r.stdout.replace(/\n+$/, '')
}

/**
 * Poll `fn` (sync or async) until `pred(value)` holds; return that value.
 * Throws an AssertionError naming `what` and the last value once `timeoutMs` is exceeded.
 */
export async function pollUntil(fn, pred, { timeoutMs = 2_000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs
  let last
  for (;;) {
    last = await fn()
    if (pred(last)) return last
    if (Date.now() >= deadline) {
      assert.fail(`${what} not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)}`)
    }
    await sleep(intervalMs)
  }
}

/**
 * Processes in the sandbox whose full command line matches the extended regex `pattern`,
 * as `pgrep -af` lines ("<pid> <cmdline>"), or '' when there are none.
 * The pattern must not match the command line of the bash that runs pgrep itself
 * (e.g. write 'sleep [1]00' instead of 'sleep 100', or anchor it with ^...$).
 */
export async function pgrep(sbx, pattern) {
  assert.ok(!pattern.includes("'"), 'pattern must not contain single quotes')
  return sh(sbx, `pgrep -af -- '${pattern}' || true`, { user: 'root' })
}

/** Wait until no process matches `pattern` (≤ timeoutMs). */
export async function waitNoProcess(sbx, pattern, timeoutMs = 2_000) {
  return pollUntil(() => pgrep(sbx, pattern), (out) => out === '', {
    timeoutMs,
    intervalMs: 100,
    what: `no process matching /${pattern}/`,
  })
}

/** Resolve with `promise`'s outcome ({ok, value|error}) or fail if it has not settled in `ms`. */
export async function settleWithin(promise, ms, what) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new assert.AssertionError({ message: `${what} did not settle within ${ms} ms` })), ms)
  })
  try {
    return await Promise.race([
      promise.then(
        (value) => ({ ok: true, value }),
        (error) => ({ ok: false, error }),
      ),
      timeout,
    ])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Load the envd service descriptors at run time from the FileDescriptorSet named by
 * COVE_DESCRIPTORS (protoc --include_imports --descriptor_set_out, produced by the build
 * as build/proto/envd.desc). Returns the registry and the process.Process service.
 */
export function loadDescriptors(path = process.env.COVE_DESCRIPTORS) {
  assert.ok(path, 'COVE_DESCRIPTORS must name a FileDescriptorSet (build/proto/envd.desc)')
  const set = fromBinary(FileDescriptorSetSchema, readFileSync(path))
  const registry = createFileRegistry(set)
  const processService = registry.getService('process.Process')
  assert.ok(processService, `process.Process not found in ${path}`)
  return { registry, processService }
}

/** The token-protected second sandbox started by run.sh: base URL and access token. */
export function secureAgent() {
  const url = process.env.COVE_SECURE_URL
  const token = process.env.COVE_SECURE_TOKEN
  assert.ok(url, 'COVE_SECURE_URL must be set (run the suite through tests/e2e/run.sh)')
  assert.match(token ?? '', /^[0-9a-f]{64}$/, 'COVE_SECURE_TOKEN must be 64 hex chars')
  return { url, token }
}

/** VmRSS of the agent (host pid COVE_AGENT_PID, exported by run.sh) in KiB. */
export function agentRssKiB(pid = process.env.COVE_AGENT_PID) {
  assert.match(pid ?? '', /^\d+$/, 'COVE_AGENT_PID must be set (run the suite through tests/e2e/run.sh)')
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  assert.ok(m, `no VmRSS in /proc/${pid}/status`)
  return Number(m[1])
}

/**
 * Samples the agent's VmRSS every `intervalMs` until stop(); stop() returns {before, peak} in KiB
 * (`before` is taken at the start, `peak` is the largest sample including one taken at stop).
 */
export function sampleAgentRss(intervalMs = 10) {
  const before = agentRssKiB()
  let peak = before
  const timer = setInterval(() => {
    peak = Math.max(peak, agentRssKiB())
  }, intervalMs)
  return {
    stop() {
      clearInterval(timer)
      peak = Math.max(peak, agentRssKiB())
      return { before, peak }
    },
  }
}
