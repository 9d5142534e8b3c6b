// files.watchDir through the e2b SDK (filesystem.Filesystem/WatchDir, a server stream over inotify):
// event types and names, recursion into existing and new subdirectories, includeEntry, stopping, and
// refusals for a missing directory or a file.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { FileNotFoundError, FilesystemEventType, InvalidArgumentError } from 'e2b'
import { TEST_TIMEOUT, createSandbox, lazy, pollUntil, sh, sleep } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }
const sandbox = lazy(createSandbox)
const { CREATE, WRITE, REMOVE, RENAME, CHMOD } = FilesystemEventType

/** Starts a watch on a fresh directory (after the shell command `setup`); events collects {name, type, entry}. */
async function watch(sbx, dir, opts = {}, setup = 'true') {
  await sh(sbx, `rm -rf ${dir} && mkdir -p ${dir} && ${setup}`)
  const events = []
  const handle = await sbx.files.watchDir(dir, (e) => events.push(e), opts)
  return { events, handle }
}

const has = (events, name, type) => events.some((e) => e.name === name && e.type === type)

/** Waits until every [name, type] pair has been seen. */
function waitFor(events, pairs, what) {
  return pollUntil(
    () => events.map((e) => [e.name, e.type]),
    () => pairs.every(([n, t]) => has(events, n, t)),
    { timeoutMs: 5_000, what: what ?? `events ${JSON.stringify(pairs)}` },
  )
}

/** inotify watches held by the agent (PID 1 of the sandbox): "inotify wd:" lines over its inotify fds. */
async function inotifyWatches(sbx) {
  const script = `for fd in /proc/1/fd/*; do
    [ "$(readlink "$fd")" = anon_inode:inotify ] && grep -c '^inotify wd:' "/proc/1/fdinfo/\${fd##*/}"
  done | awk '{ n += $1 } END { print n + 0 }'`
  return Number(await sh(sbx, script, { user: 'root' }))
}

describe('watchDir', () => {
  test('files.write is seen as create + write (new file) and write (existing file, as upstream\'s SDK test)', T, async () => {
    const sbx = await sandbox()
    const dir = '/home/user/cove-watch-sdk'
    const { events, handle } = await watch(sbx, dir, {}, `echo old > ${dir}/existing.txt`)
    try {
      await sbx.files.write(`${dir}/existing.txt`, 'This file has been modified.')
      await sbx.files.write(`${dir}/new.txt`, 'hello')
      await waitFor(events, [['existing.txt', WRITE], ['new.txt', CREATE], ['new.txt', WRITE]])
      // Nothing but the two files shows up (no helper or temporary names).
      assert.deepEqual([...new Set(events.map((e) => e.name))].sort(), ['existing.txt', 'new.txt'])
    } finally {
      await handle.stop()
    }
  })

  test('plain watch: create, write, rename, chmod and remove with names relative to the dir', T, async () => {
    const sbx = await sandbox()
    const dir = '/home/user/cove-watch'
    const { events, handle } = await watch(sbx, dir, {}, `mkdir ${dir}/sub`)
    try {
      await sh(sbx, `echo hello > ${dir}/f.txt`)
      await waitFor(events, [['f.txt', CREATE], ['f.txt', WRITE]])

      await sh(sbx, `echo inner > ${dir}/sub/inner.txt; mv ${dir}/f.txt ${dir}/g.txt; chmod 600 ${dir}/g.txt; rm ${dir}/g.txt; touch ${dir}/marker`)
      await waitFor(events, [['f.txt', RENAME], ['g.txt', CREATE], ['g.txt', CHMOD], ['g.txt', REMOVE], ['marker', CREATE]])
      // Not recursive: nothing from inside sub/, and no entries unless asked for.
      assert.ok(!events.some((e) => e.name.includes('inner')), `events: ${JSON.stringify(events)}`)
      assert.ok(events.every((e) => e.entry === undefined), 'entry present without includeEntry')
      // Order within one file's life: created before written, removed last.
      const g = events.filter((e) => e.name === 'g.txt').map((e) => e.type)
      assert.equal(g[0], CREATE)
      assert.equal(g.at(-1), REMOVE)
    } finally {
      await handle.stop()
    }
  })

  test('recursive watch: nested names dir/file, also in directories created after the start', T, async () => {
    const sbx = await sandbox()
    const dir = '/home/user/cove-watch-rec'
    const { events, handle } = await watch(sbx, dir, { recursive: true }, `mkdir -p ${dir}/sub/deeper`)
    try {
      await sh(sbx, `echo nested > ${dir}/sub/nested.txt; echo deep > ${dir}/sub/deeper/d.txt`)
      await waitFor(events, [['sub/nested.txt', CREATE], ['sub/nested.txt', WRITE], ['sub/deeper/d.txt', CREATE]])

      await sbx.files.makeDir(`${dir}/later`)
      await waitFor(events, [['later', CREATE]])
      await sh(sbx, `echo late > ${dir}/later/l.txt; rm ${dir}/sub/nested.txt`)
      await waitFor(events, [['later/l.txt', CREATE], ['later/l.txt', WRITE], ['sub/nested.txt', REMOVE]])
      assert.ok(events.every((e) => !e.name.startsWith('/')), `absolute names: ${JSON.stringify(events)}`)
    } finally {
      await handle.stop()
    }
  })

  test('includeEntry attaches entry info to create and write events', T, async () => {
    const sbx = await sandbox()
    const dir = '/home/user/cove-watch-entry'
    const { events, handle } = await watch(sbx, dir, { includeEntry: true, recursive: true }, `mkdir ${dir}/sub`)
    try {
      await sh(sbx, `printf entry > ${dir}/sub/e.txt`)
      await waitFor(events, [['sub/e.txt', CREATE], ['sub/e.txt', WRITE]])
      for (const e of events.filter((x) => x.name === 'sub/e.txt')) {
        assert.ok(e.entry, `no entry on ${e.type}: ${JSON.stringify(e)}`)
        assert.equal(e.entry.name, 'e.txt')
        assert.equal(e.entry.type, 'file')
        assert.equal(e.entry.path, `${dir}/sub/e.txt`)
        assert.equal(e.entry.owner, 'user')
      }
      assert.equal(events.filter((x) => x.name === 'sub/e.txt' && x.type === WRITE).at(-1).entry.size, 5)
      await sh(sbx, `rm ${dir}/sub/e.txt`)
      await waitFor(events, [['sub/e.txt', REMOVE]])
      assert.equal(events.find((e) => e.type === REMOVE).entry, undefined)
    } finally {
      await handle.stop()
    }
  })

  test('stop() ends the watch: no more events, and the agent drops its inotify watch', T, async () => {
    const sbx = await sandbox()
    // Earlier watches may still be closing: take the count once it holds still.
    let before = await inotifyWatches(sbx)
    for (let again; (await sleep(200), (again = await inotifyWatches(sbx))) !== before; ) before = again
    const dir = '/home/user/cove-watch-stop'
    const { events, handle } = await watch(sbx, dir)
    assert.equal(await inotifyWatches(sbx), before + 1, 'one inotify watch for a plain watch of an empty dir')
    await sh(sbx, `touch ${dir}/one`)
    await waitFor(events, [['one', CREATE]])
    await handle.stop()
    await pollUntil(() => inotifyWatches(sbx), (n) => n === before, { what: 'inotify watches back to their count before the watch' })
    await sh(sbx, `touch ${dir}/two`)
    await sleep(300)
    assert.ok(!events.some((e) => e.name === 'two'), `event after stop: ${JSON.stringify(events)}`)
  })

  test('watching a missing directory or a file fails', T, async () => {
    const sbx = await sandbox()
    await assert.rejects(sbx.files.watchDir('/home/user/cove-no-such-dir', () => {}), (e) => {
      assert.ok(e instanceof FileNotFoundError, `${e?.name}: ${e?.message}`)
      return true
    })
    await sh(sbx, 'touch /home/user/cove-watch-file')
    await assert.rejects(sbx.files.watchDir('/home/user/cove-watch-file', () => {}), (e) => {
      assert.ok(e instanceof InvalidArgumentError, `${e?.name}: ${e?.message}`)
      return true
    })
    // Failed watches leave nothing behind: a valid one still starts.
    const { handle } = await watch(sbx, '/home/user/cove-watch-after')
    await handle.stop()
  })
})
