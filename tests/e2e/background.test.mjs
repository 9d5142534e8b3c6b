// Background commands: list/kill, process-group kill, stdin, timeouts, reconnect with replay.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { CommandExitError, TimeoutError } from 'e2b'
import { TEST_TIMEOUT, createSandbox, lazy, pgrep, pollUntil, settleWithin, sleep, waitNoProcess } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }
const sandbox = lazy(createSandbox)

/** A killed command's wait() rejects with CommandExitError, exit code -1 (envd: "signal: killed"). */
async function assertKilled(handle, what) {
  const r = await settleWithin(handle.wait(), 5_000, `${what}: handle.wait()`)
  assert.equal(r.ok, false, `${what}: wait() resolved although the process was killed`)
  assert.ok(r.error instanceof CommandExitError, `${what}: got ${r.error?.name}: ${r.error?.message}`)
  assert.equal(r.error.exitCode, -1)
  assert.equal(r.error.error, 'signal: killed')
}

describe('background commands', () => {
  test('list shows a background command with its config; kill removes it', T, async () => {
    const sbx = await sandbox()
    const handle = await sbx.commands.run('sleep 30', { background: true })
    assert.ok(Number.isInteger(handle.pid) && handle.pid > 0, `pid ${handle.pid}`)

    const listed = (await sbx.commands.list()).find((p) => p.pid === handle.pid)
    assert.ok(listed, `pid ${handle.pid} missing from commands.list()`)
    // The SDK flattens ProcessInfo.config into {cmd, args, envs, cwd?}.
    assert.equal(listed.cmd, '/bin/bash')
    assert.deepEqual(listed.args, ['-l', '-c', 'sleep 30'])

    assert.equal(await sbx.commands.kill(handle.pid), true)
    await assertKilled(handle, 'sleep 30')
    await pollUntil(
      () => sbx.commands.list(),
      (list) => !list.some((p) => p.pid === handle.pid),
      { what: `pid ${handle.pid} gone from commands.list()` },
    )
    assert.equal(await sbx.commands.kill(handle.pid), false, 'killing an already-dead pid must return false')
  })

  test('kill of an unknown pid returns false', T, async () => {
    const sbx = await sandbox()
    assert.equal(await sbx.commands.kill(999999), false)
  })

  test('kill takes down the whole process group', T, async () => {
    const sbx = await sandbox()
    const pattern = 'sleep [1]00'
    const handle = await sbx.commands.run("bash -c 'sleep 100 & sleep 100 & wait'", { background: true })
    // Both sleeps (and the inner bash, whose command line mentions them) are running.
    await pollUntil(
      () => pgrep(sbx, '^sleep [1]00$'),
      (out) => out.split('\n').filter(Boolean).length === 2,
      { what: 'two `sleep 100` children running' },
    )
    assert.equal(await handle.kill(), true)
    await waitNoProcess(sbx, pattern, 2_000)
    await assertKilled(handle, 'process group')
  })

  test('stdin: sendStdin is forwarded unbuffered, closeStdin gives EOF', T, async () => {
    const sbx = await sandbox()
    const handle = await sbx.commands.run('cat', { background: true, stdin: true })
    await sbx.commands.sendStdin(handle.pid, 'Hello, World!')
    await pollUntil(
      () => handle.stdout,
      (out) => out.includes('Hello, World!'),
      { timeoutMs: 2_500, what: 'stdin echoed by cat (no newline sent)' },
    )
    await sbx.commands.sendStdin(handle.pid, new TextEncoder().encode(' second\n'))
    await sbx.commands.closeStdin(handle.pid)
    const r = await settleWithin(handle.wait(), 5_000, 'cat after closeStdin')
    assert.ok(r.ok, `cat failed: ${r.error}`)
    assert.equal(r.value.exitCode, 0)
    assert.equal(r.value.stdout, 'Hello, World! second\n')
  })

  test('a command without stdin:true cannot be written to', T, async () => {
    const sbx = await sandbox()
    const handle = await sbx.commands.run('cat', { background: true })
    // stdin is /dev/null, so cat sees EOF and exits at once.
    const r = await settleWithin(handle.wait(), 5_000, 'cat with stdin disabled')
    assert.ok(r.ok, `cat failed: ${r.error}`)
    assert.equal(r.value.stdout, '')
  })

  test('timeoutMs kills the command and rejects with TimeoutError', T, async () => {
    const sbx = await sandbox()
    const started = Date.now()
    await assert.rejects(sbx.commands.run('sleep 10', { timeoutMs: 1_000 }), TimeoutError)
    const elapsed = Date.now() - started
    assert.ok(elapsed < 5_000, `took ${elapsed} ms`)
    // The agent kills the process at the deadline (not only the client giving up).
    await waitNoProcess(sbx, '^(/bin/bash -l -c )?sleep 10$', 2_000)
  })

  test('reconnect replays output produced while disconnected, in order, once', T, async () => {
    const sbx = await sandbox()
    // The loop prints a tick every 0.3 s (~1.8 s in all). The first attachment sees tick-1 live and
    // detaches half-way to tick-2; tick-2..tick-6 are produced while nobody is attached. Cove keeps
    // that output and replays it on Connect (envd would drop it). Across both attachments every
    // tick must arrive exactly once, in order.
    const all = 'tick-1\ntick-2\ntick-3\ntick-4\ntick-5\ntick-6\n'
    let firstAttach = ''
    let sawTick1
    const tick1 = new Promise((resolve) => (sawTick1 = resolve))
    const handle = await sbx.commands.run(
      "bash -c 'for i in 1 2 3 4 5 6; do echo tick-$i; sleep 0.3; done'",
      {
        background: true,
        onStdout: (d) => {
          firstAttach += d
          if (firstAttach.includes('tick-1')) sawTick1()
        },
      },
    )
    const seen = await settleWithin(tick1, 3_000, 'tick-1 on the first attachment')
    assert.ok(seen.ok)
    await sleep(150)
    await handle.disconnect()
    await sleep(2_500) // the loop finishes while nobody is attached

    let secondAttach = ''
    const again = await sbx.commands.connect(handle.pid, { onStdout: (d) => (secondAttach += d) })
    assert.equal(again.pid, handle.pid)
    const r = await settleWithin(again.wait(), 5_000, 'reconnected handle')
    assert.ok(r.ok, `reconnected wait failed: ${r.error}`)
    assert.equal(r.value.exitCode, 0)
    // Everything produced while detached is replayed (at least tick-3 .. tick-6, whatever the timing) ...
    assert.match(r.value.stdout, /tick-3\ntick-4\ntick-5\ntick-6\n$/, `replayed stdout: ${JSON.stringify(r.value.stdout)}`)
    // ... and together with what the first attachment saw, each tick exactly once, in order.
    assert.equal(firstAttach + r.value.stdout, all, `first: ${JSON.stringify(firstAttach)}, replay: ${JSON.stringify(r.value.stdout)}`)
    assert.equal(secondAttach, r.value.stdout, 'onStdout of the reconnected handle saw different output')
  })
})
