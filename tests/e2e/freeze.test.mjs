// POST /freeze and the way back (the host calls them around a pause or checkpoint): the agent
// lets go of every inotify descriptor and of its io_uring, processes keep running, and after
// POST /init (what the host sends after a resume) watchers deliver events again and a command
// started before the freeze can be re-attached. Cutting host-channel connections needs the Unix
// socket, which this suite does not use: tests/unit/host_channel_quiesce_test.cpp covers it.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { FilesystemEventType } from 'e2b'
import { AGENT_URL, TEST_TIMEOUT, createSandbox, lazy, pollUntil, settleWithin, sh, sleep } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }
const sandbox = lazy(createSandbox)

async function post(path, body) {
  const res = await fetch(`${AGENT_URL}${path}`, {
    method: 'POST',
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  await res.arrayBuffer()
  return res.status
}

// The host's /init after a resume: a fresh timestamp, nothing else changed.
const reinit = () => post('/init', { timestamp: new Date().toISOString() })

/** Descriptors of the agent (PID 1 of the sandbox) whose link is exactly `target`. */
async function agentFds(sbx, target) {
  const script = `n=0; for fd in /proc/1/fd/*; do [ "$(readlink "$fd")" = '${target}' ] && n=$((n+1)); done; echo $n`
  return Number(await sh(sbx, script, { user: 'root' }))
}

describe('freeze', () => {
  test('watchDir: /freeze lets go of inotify (and io_uring), /init watches again', T, async () => {
    const sbx = await sandbox()
    const dir = '/home/user/cove-freeze-watch'
    await sh(sbx, `rm -rf ${dir} && mkdir -p ${dir}`)
    const events = []
    const handle = await sbx.files.watchDir(dir, (e) => events.push(e))
    let frozen = false
    try {
      assert.ok((await agentFds(sbx, 'anon_inode:inotify')) >= 1, 'the watch holds an inotify descriptor')
      assert.equal(await post('/freeze'), 204)
      frozen = true
      assert.equal(await post('/freeze'), 204, 'a second /freeze is answered the same')
      assert.equal(await agentFds(sbx, 'anon_inode:inotify'), 0, 'inotify descriptors left after /freeze')
      assert.equal(await agentFds(sbx, 'anon_inode:[io_uring]'), 0, 'io_uring left after /freeze')

      assert.equal(await reinit(), 204)
      frozen = false
      assert.ok((await agentFds(sbx, 'anon_inode:inotify')) >= 1, 'no inotify descriptor after /init')
      await sbx.files.write(`${dir}/after.txt`, 'hello')
      await pollUntil(
        () => events.map((e) => [e.name, e.type]),
        (seen) => seen.some(([n, t]) => n === 'after.txt' && t === FilesystemEventType.CREATE),
        { timeoutMs: 5_000, what: 'CREATE after.txt on the same watch after /init' },
      )
    } finally {
      if (frozen) await reinit()
      await handle.stop()
    }
  })

  test('/unfreeze (an abandoned pause) re-arms watchers too', T, async () => {
    const sbx = await sandbox()
    const dir = '/home/user/cove-freeze-unfreeze'
    await sh(sbx, `rm -rf ${dir} && mkdir -p ${dir}`)
    const events = []
    const handle = await sbx.files.watchDir(dir, (e) => events.push(e))
    let frozen = false
    try {
      assert.equal(await post('/freeze'), 204)
      frozen = true
      assert.equal(await agentFds(sbx, 'anon_inode:inotify'), 0)
      assert.equal(await post('/unfreeze'), 204)
      frozen = false
      await sbx.files.write(`${dir}/x.txt`, 'x')
      await pollUntil(
        () => events.map((e) => e.name),
        (names) => names.includes('x.txt'),
        { timeoutMs: 5_000, what: 'an event for x.txt after /unfreeze' },
      )
    } finally {
      if (frozen) await reinit()
      await handle.stop()
    }
  })

  test('a command started before /freeze keeps running and is re-attached after /init', T, async () => {
    const sbx = await sandbox()
    let first = ''
    const handle = await sbx.commands.run("bash -c 'for i in $(seq 1 40); do echo tick-$i; sleep 0.1; done'", {
      background: true,
      onStdout: (d) => (first += d),
    })
    let frozen = false
    try {
      await pollUntil(() => first, (s) => s.includes('tick-1\n'), { timeoutMs: 3_000, what: 'tick-1' })
      await handle.disconnect() // the stream is cut, as a host connection is on /freeze
      assert.equal(await post('/freeze'), 204)
      frozen = true
      await sleep(300) // the command goes on while frozen-prepared
      assert.equal(await reinit(), 204)
      frozen = false

      const again = await sbx.commands.connect(handle.pid, {})
      assert.equal(again.pid, handle.pid)
      const r = await settleWithin(again.wait(), 10_000, 'the re-attached command')
      assert.ok(r.ok, `re-attached wait failed: ${r.error}`)
      assert.equal(r.value.exitCode, 0)
      // What ran while detached (across the freeze) is replayed, then the rest arrives live: the
      // re-attached output is every tick from just after the first attachment's last one to the
      // end, in order. (One tick may have been in flight to the first client when it left.)
      const number = (s) => (s.match(/tick-(\d+)/g) ?? []).map((t) => Number(t.slice(5)))
      const seenFirst = number(first)
      const seenAgain = number(r.value.stdout)
      const lastFirst = seenFirst[seenFirst.length - 1]
      assert.ok(seenAgain[0] <= lastFirst + 2, `re-attached output starts at tick-${seenAgain[0]}, first saw up to tick-${lastFirst}`)
      assert.deepEqual(seenAgain, Array.from({ length: 41 - seenAgain[0] }, (_, i) => seenAgain[0] + i), 'ticks in order, none missing')
    } finally {
      if (frozen) await reinit()
    }
  })
})
