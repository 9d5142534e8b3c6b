// Sandbox lifecycle through the control plane: create/getInfo/list/timeouts/connect/kill,
// API keys and teams, metrics.
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'

import { AuthenticationError, Sandbox, SandboxError, SandboxNotFoundError, TimeoutError } from 'e2b'
import {
  RUN_ID,
  T,
  env,
  killTracked,
  newSandbox,
  pollUntil,
  rejectsWith,
  settleWithin,
  sh,
  sleep,
  track,
} from './helpers.mjs'

after(killTracked)

const MiB = 1024 * 1024
const SEMVER = /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/

/** Drain a paginator page by page: [{items, hasNextAfter}]; at most `max` pages. */
async function pages(paginator, max = 10) {
  const out = []
  while (paginator.hasNext) {
    assert.ok(out.length < max, `paginator still hasNext after ${max} pages`)
    const items = await paginator.nextItems()
    out.push({ items, hasNextAfter: paginator.hasNext })
  }
  return out
}

describe('create and getInfo', () => {
  test('metadata, envs and timeout reach the sandbox and getInfo', T, async () => {
    const metadata = { suite: 'lifecycle', run: RUN_ID, purpose: 'getInfo' }
    const before = Date.now()
    const sbx = await newSandbox({ metadata, envs: { FOO: 'bar baz', COVE_E2E: '1' }, timeoutMs: 120_000 })
    const r = await sbx.commands.run('echo $FOO')
    assert.equal(r.stdout, 'bar baz\n', 'create envs are visible to commands')
    assert.equal(await sh(sbx, 'echo $COVE_E2E'), '1')
    // Per-command envs still win over the sandbox's.
    assert.equal(await sh(sbx, 'echo $FOO', { envs: { FOO: 'per-command' } }), 'per-command')

    const info = await sbx.getInfo()
    assert.equal(info.sandboxId, sbx.sandboxId)
    assert.equal(info.templateId, 'base')
    // run.sh gives the base template the alias e2e-alias; the API reports it as the name.
    assert.equal(info.name, 'e2e-alias', `name (alias): ${JSON.stringify(info)}`)
    assert.deepEqual(info.metadata, metadata)
    assert.ok(info.startedAt instanceof Date && !Number.isNaN(info.startedAt.getTime()), 'startedAt is a Date')
    assert.ok(info.endAt instanceof Date && !Number.isNaN(info.endAt.getTime()), 'endAt is a Date')
    assert.ok(
      info.startedAt.getTime() >= before - 2_000 && info.startedAt.getTime() <= Date.now() + 2_000,
      `startedAt ${info.startedAt.toISOString()} is not about now`,
    )
    const lifetime = info.endAt.getTime() - info.startedAt.getTime()
    assert.ok(Math.abs(lifetime - 120_000) <= 2_000, `endAt - startedAt = ${lifetime} ms, expected ≈ 120000`)
    assert.equal(info.state, 'running')
    assert.equal(info.cpuCount, 1)
    assert.equal(info.memoryMB, 256)
    assert.match(info.envdVersion ?? '', SEMVER, 'envdVersion is semver')
    assert.equal(info.allowInternetAccess ?? true, true)

    // The same through the static call, and through the template alias.
    const same = await Sandbox.getInfo(sbx.sandboxId)
    assert.equal(same.sandboxId, sbx.sandboxId)
    assert.deepEqual(same.metadata, metadata)
    const byAlias = await newSandbox({ template: 'e2e-alias', timeoutMs: 60_000 })
    const aliasInfo = await byAlias.getInfo()
    assert.equal(aliasInfo.templateId, 'base')
    assert.equal(aliasInfo.name, 'e2e-alias')
  })

  test('an unknown template is refused with an error, not a sandbox', T, async () => {
    const err = await Sandbox.create('no-such-template-e2e', { timeoutMs: 30_000 }).then(
      (s) => {
        track(s)
        assert.fail(`created ${s.sandboxId} from a template that does not exist`)
      },
      (e) => e,
    )
    assert.ok(!(err instanceof assert.AssertionError), err?.message)
    assert.ok(
      err instanceof SandboxError && [400, 404].includes(err.statusCode),
      `expected a SandboxError with status 400 or 404, got ${err?.constructor?.name} (${err?.statusCode}): ${err?.message}`,
    )
  })
})

describe('list', () => {
  test('metadata filter (with spaces and &) pages newest first with limit 1', T, async () => {
    const metadata = { run: RUN_ID, 'a b': 'c&d', 'k=v?': 'x/y %20' }
    const ids = []
    for (let i = 0; i < 3; i++) {
      if (i > 0) await sleep(1_100) // distinct startedAt even at one-second resolution
      const sbx = await newSandbox({ metadata, timeoutMs: 120_000 })
      ids.push(sbx.sandboxId)
    }
    const newestFirst = [...ids].reverse()

    const got = await pages(Sandbox.list({ query: { metadata }, limit: 1 }))
    const summary = JSON.stringify(got.map((p) => ({ ids: p.items.map((s) => s.sandboxId), hasNext: p.hasNextAfter })))
    assert.equal(got.length, 3, `expected 3 pages of 1, got ${summary}`)
    for (const [i, p] of got.entries()) {
      assert.equal(p.items.length, 1, `page ${i} has ${p.items.length} items: ${summary}`)
      assert.equal(p.hasNextAfter, i < 2, `hasNext after page ${i}: ${summary}`)
    }
    assert.deepEqual(got.map((p) => p.items[0].sandboxId), newestFirst, `newest first: ${summary}`)
    const first = got[0].items[0]
    assert.deepEqual(first.metadata, metadata)
    assert.equal(first.templateId, 'base')
    assert.equal(first.state, 'running')
    assert.equal(first.memoryMB, 256)
    assert.ok(first.startedAt instanceof Date && first.endAt instanceof Date)

    // One page with everything, and the filter really filters.
    const all = await Sandbox.list({ query: { metadata } }).nextItems()
    assert.deepEqual(all.map((s) => s.sandboxId), newestFirst)
    const none = await Sandbox.list({ query: { metadata: { ...metadata, 'a b': 'c&e' } } }).nextItems()
    assert.deepEqual(none.map((s) => s.sandboxId), [], 'a different value of "a b" matches nothing')
    const oneKey = await Sandbox.list({ query: { metadata: { 'a b': 'c&d', run: RUN_ID } } }).nextItems()
    assert.deepEqual(oneKey.map((s) => s.sandboxId).sort(), [...ids].sort(), 'a subset of the metadata matches')
    const running = await Sandbox.list({ query: { metadata, state: ['running'] } }).nextItems()
    assert.equal(running.length, 3, 'state=running')
    const paused = await Sandbox.list({ query: { metadata, state: ['paused'] } }).nextItems()
    assert.equal(paused.length, 0, 'state=paused')
  })
})

describe('timeouts and connect', () => {
  test('setTimeout(4000): gone after 6 s, then connect is SandboxNotFoundError', T, async () => {
    const sbx = await newSandbox({ timeoutMs: 120_000 })
    assert.equal(await sbx.isRunning(), true)
    await sbx.setTimeout(4_000)
    const info = await sbx.getInfo()
    const left = info.endAt.getTime() - Date.now()
    assert.ok(left <= 5_000 && left > 0, `endAt after setTimeout(4000) is ${left} ms away`)
    await sleep(6_000)
    assert.equal(await sbx.isRunning(), false, 'isRunning() 6 s after setTimeout(4000)')
    await rejectsWith(Sandbox.connect(sbx.sandboxId), SandboxNotFoundError, 'Sandbox.connect(expired)')
    await rejectsWith(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError, 'Sandbox.getInfo(expired)')
    assert.equal(await Sandbox.kill(sbx.sandboxId), false, 'Sandbox.kill(expired)')
    const listed = await Sandbox.list({ limit: 100 }).nextItems()
    assert.ok(!listed.some((s) => s.sandboxId === sbx.sandboxId), 'an expired sandbox is not listed')
  })

  test('setTimeout lengthens a sandbox', T, async () => {
    const sbx = await newSandbox({ timeoutMs: 30_000 })
    await sbx.setTimeout(600_000)
    const info = await sbx.getInfo()
    const left = info.endAt.getTime() - Date.now()
    assert.ok(Math.abs(left - 600_000) <= 3_000, `endAt is ${left} ms away, expected ≈ 600000`)
  })

  test('connect extends endAt but never shortens it', T, async () => {
    const sbx = await newSandbox({ timeoutMs: 120_000 })
    const before = (await sbx.getInfo()).endAt

    const short = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 10_000 })
    assert.equal(short.sandboxId, sbx.sandboxId)
    const afterShort = (await sbx.getInfo()).endAt
    assert.ok(
      afterShort.getTime() >= before.getTime(),
      `connect(timeoutMs 10000) shortened endAt from ${before.toISOString()} to ${afterShort.toISOString()}`,
    )
    // The connected handle works.
    assert.equal(await sh(short, 'echo connected'), 'connected')

    const t0 = Date.now()
    await Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 })
    const afterLong = (await sbx.getInfo()).endAt
    assert.ok(afterLong.getTime() > before.getTime(), 'connect(timeoutMs 600000) did not extend endAt')
    const expected = t0 + 600_000
    assert.ok(
      Math.abs(afterLong.getTime() - expected) <= 3_000,
      `endAt after connect(600000) is ${afterLong.toISOString()}, expected ≈ ${new Date(expected).toISOString()}`,
    )
    // Connecting with no timeout must not shorten a 600 s sandbox to the 300 s default either.
    await Sandbox.connect(sbx.sandboxId)
    const afterDefault = (await sbx.getInfo()).endAt
    assert.ok(afterDefault.getTime() >= afterLong.getTime(), 'connect() without timeout shortened endAt')
  })
})

describe('kill', () => {
  test('kill twice: true, then false; the sandbox is gone', T, async () => {
    const sbx = await newSandbox({ timeoutMs: 120_000 })
    assert.equal(await Sandbox.kill(sbx.sandboxId), true, 'first kill')
    assert.equal(await Sandbox.kill(sbx.sandboxId), false, 'second kill')
    assert.equal(await sbx.isRunning(), false, 'isRunning() after kill')
    await rejectsWith(Sandbox.connect(sbx.sandboxId), SandboxNotFoundError, 'Sandbox.connect(killed)')
    await rejectsWith(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError, 'Sandbox.getInfo(killed)')
    await rejectsWith(sbx.setTimeout(60_000), SandboxNotFoundError, 'setTimeout(killed)')
    assert.equal(await Sandbox.kill('no-such-sandbox-e2e'), false, 'kill of an id that never existed')
  })

  test('kill during commands.run: the run rejects with TimeoutError (killed / end of life)', T, async () => {
    const sbx = await newSandbox({ timeoutMs: 120_000 })
    const started = Date.now()
    const run = sbx.commands.run('sleep 30', { timeoutMs: 60_000 })
    const settled = settleWithin(run, 20_000, 'commands.run("sleep 30") after the sandbox was killed')
    await pollUntil(
      () => sh(sbx, "pgrep -x sleep >/dev/null && echo yes || echo no"),
      (v) => v === 'yes',
      { timeoutMs: 10_000, intervalMs: 200, what: 'sleep 30 running' },
    )
    assert.equal(await Sandbox.kill(sbx.sandboxId), true)
    const outcome = await settled
    assert.equal(outcome.ok, false, `the run resolved: ${JSON.stringify(outcome.value)}`)
    assert.ok(
      outcome.error instanceof TimeoutError,
      `expected TimeoutError, got ${outcome.error?.constructor?.name}: ${outcome.error?.message}`,
    )
    assert.match(outcome.error.message, /killed or reached its end of life/)
    assert.ok(Date.now() - started < 25_000, 'the run ended long before sleep 30 would have')
  })
})

describe('API keys and teams', () => {
  const wrongKey = `e2b_${'0'.repeat(40)}`

  test('a wrong key gets AuthenticationError on create, list, getInfo and kill', T, async () => {
    await rejectsWith(Sandbox.create({ apiKey: wrongKey, timeoutMs: 30_000 }), AuthenticationError, 'create with a wrong key')
    await rejectsWith(Sandbox.list({ apiKey: wrongKey }).nextItems(), AuthenticationError, 'list with a wrong key')
    const sbx = await newSandbox({ timeoutMs: 60_000 })
    await rejectsWith(Sandbox.getInfo(sbx.sandboxId, { apiKey: wrongKey }), AuthenticationError, 'getInfo with a wrong key')
    await rejectsWith(Sandbox.kill(sbx.sandboxId, { apiKey: wrongKey }), AuthenticationError, 'kill with a wrong key')
    assert.equal(await sbx.isRunning(), true, 'a wrong key killed the sandbox')
    // A key-shaped string that is a prefix of the real key is not the key.
    const real = env('E2B_API_KEY')
    await rejectsWith(
      Sandbox.list({ apiKey: real.slice(0, -1) }).nextItems(),
      AuthenticationError,
      'list with the real key minus its last character',
    )
  })

  test("another team cannot see, kill, connect to or retime this team's sandbox", T, async () => {
    const other = env('COVE_OTHER_TEAM_KEY')
    const metadata = { run: RUN_ID, purpose: 'teams' }
    const sbx = await newSandbox({ metadata, timeoutMs: 120_000 })
    const endAt = (await sbx.getInfo()).endAt

    await rejectsWith(Sandbox.getInfo(sbx.sandboxId, { apiKey: other }), SandboxNotFoundError, 'getInfo by the other team')
    assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: other }), false, 'kill by the other team')
    await rejectsWith(Sandbox.connect(sbx.sandboxId, { apiKey: other }), SandboxNotFoundError, 'connect by the other team')
    await rejectsWith(
      Sandbox.setTimeout(sbx.sandboxId, 1_000, { apiKey: other }),
      SandboxNotFoundError,
      'setTimeout by the other team',
    )
    await rejectsWith(Sandbox.getMetrics(sbx.sandboxId, { apiKey: other }), SandboxNotFoundError, 'getMetrics by the other team')
    const theirs = await Sandbox.list({ apiKey: other, query: { metadata } }).nextItems()
    assert.deepEqual(theirs, [], 'the other team lists our sandbox')
    const theirsAll = await pages(Sandbox.list({ apiKey: other, limit: 100 }), 50)
    assert.ok(
      !theirsAll.flatMap((p) => p.items).some((s) => s.sandboxId === sbx.sandboxId),
      'the other team lists our sandbox without a filter',
    )

    // Nothing they tried changed it.
    assert.equal(await sbx.isRunning(), true)
    assert.equal(await sh(sbx, 'echo still-here'), 'still-here')
    assert.equal((await sbx.getInfo()).endAt.getTime(), endAt.getTime(), 'the other team changed endAt')
    const ours = await Sandbox.list({ query: { metadata } }).nextItems()
    assert.deepEqual(ours.map((s) => s.sandboxId), [sbx.sandboxId])
  })
})

describe('metrics', () => {
  test('getMetrics reports cpu, memory ≈ 256 MiB and disk ≈ 512 MiB', T, async () => {
    const sbx = await newSandbox({ timeoutMs: 120_000 })
    await sleep(10_000)
    const metrics = await pollUntil(() => sbx.getMetrics(), (m) => m.length > 0, {
      timeoutMs: 20_000,
      intervalMs: 1_000,
      what: 'a non-empty getMetrics()',
    })
    const m = metrics.at(-1)
    const show = JSON.stringify(m)
    assert.ok(m.timestamp instanceof Date && !Number.isNaN(m.timestamp.getTime()), `timestamp: ${show}`)
    assert.ok(Math.abs(m.timestamp.getTime() - Date.now()) < 60_000, `timestamp is not recent: ${show}`)
    assert.equal(m.cpuCount, 1, `cpuCount: ${show}`)
    assert.ok(m.cpuUsedPct >= 0 && m.cpuUsedPct <= 100 * m.cpuCount, `cpuUsedPct: ${show}`)
    assert.ok(m.memTotal >= 240 * MiB && m.memTotal <= 272 * MiB, `memTotal ≈ 256 MiB: ${show}`)
    assert.ok(m.memUsed > 0 && m.memUsed <= m.memTotal, `memUsed: ${show}`)
    assert.ok(m.diskTotal >= 0.8 * 512 * MiB && m.diskTotal <= 1.05 * 512 * MiB, `diskTotal ≈ 512 MiB: ${show}`)
    assert.ok(m.diskUsed > 0 && m.diskUsed <= m.diskTotal, `diskUsed: ${show}`)
    // Metrics are ordered in time.
    for (let i = 1; i < metrics.length; i++) {
      assert.ok(metrics[i].timestamp >= metrics[i - 1].timestamp, 'metrics are not in time order')
    }
  })
})
