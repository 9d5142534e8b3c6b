// A shim crash (SIGKILL) and restart: running sandboxes survive and are adopted again, with
// their files and processes, reachable under the same id.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, describe, test } from 'node:test'

import { Sandbox } from 'e2b'
import { RUN_ID, T_LONG, coveSandboxIds, env, killTracked, newSandbox, pollUntil, sh } from './helpers.mjs'

after(killTracked)

describe('shim restart', () => {
  test('after kill -9 and restart the same sandbox is connected, with its file and process', T_LONG, async () => {
    const metadata = { run: RUN_ID, file: 'restart' }
    const sbx = await newSandbox({ metadata, timeoutMs: 600_000 })
    const id = sbx.sandboxId
    await sbx.files.write('/home/user/before-restart.txt', 'kept')
    const bg = await sbx.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    const endAtBefore = (await sbx.getInfo()).endAt
    assert.ok(coveSandboxIds().includes(id), 'cove sandbox list shows the sandbox before the restart')

    try {
      execFileSync(env('COVE_SHIMCTL'), ['restart'], { encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] })
    } catch (e) {
      assert.fail(`shimctl restart failed (exit ${e.status}): ${e.stderr ?? e.message}`)
    }

    // Control plane: the same sandbox, running, same endAt.
    const connected = await Sandbox.connect(id)
    assert.equal(connected.sandboxId, id)
    const info = await connected.getInfo()
    assert.equal(info.state, 'running')
    assert.deepEqual(info.metadata, metadata)
    // The restart (and a connect without a timeout) must not shorten its lifetime.
    assert.ok(
      info.endAt.getTime() >= endAtBefore.getTime() - 1_000,
      `endAt moved earlier across the restart: ${endAtBefore.toISOString()} → ${info.endAt.toISOString()}`,
    )
    const listed = await Sandbox.list({ query: { metadata } }).nextItems()
    assert.deepEqual(listed.map((s) => s.sandboxId), [id], 'Sandbox.list after the restart')
    assert.ok(coveSandboxIds().includes(id), 'cove sandbox list shows the sandbox after the restart')

    // Data plane: commands, the file, the background process.
    assert.equal(await sh(connected, 'echo after-restart'), 'after-restart')
    assert.equal(await connected.files.read('/home/user/before-restart.txt'), 'kept')
    const procs = await connected.commands.list()
    assert.ok(
      procs.some((p) => p.pid === bg.pid && p.args.at(-1) === 'sleep 600'),
      `background pid ${bg.pid} (sleep 600) not in commands.list() after the restart: ${JSON.stringify(procs)}`,
    )
    // The old handle (same id, same token) works too.
    assert.equal(await sh(sbx, 'echo old-handle'), 'old-handle')

    // Lifecycle still works on an adopted sandbox: kill it, and it is gone.
    assert.equal(await Sandbox.kill(id), true)
    await pollUntil(() => connected.isRunning(), (r) => r === false, {
      timeoutMs: 10_000,
      intervalMs: 300,
      what: 'isRunning() false after kill',
    })
    assert.ok(!coveSandboxIds().includes(id), 'cove sandbox list still shows the killed sandbox')
  })

  test('a sandbox created after the restart works', T_LONG, async () => {
    const sbx = await newSandbox({ metadata: { run: RUN_ID, file: 'restart', after: 'yes' }, timeoutMs: 120_000 })
    assert.equal(await sh(sbx, 'echo new'), 'new')
    assert.equal(await Sandbox.kill(sbx.sandboxId), true)
  })
})
