// Snapshots and fork through the TLS edge with the unchanged SDK (issue 8): a snapshot is a
// checkpoint of memory and files that leaves its source running; Sandbox.create(snapshotId) and
// Sandbox.fork() restore new, independent sandboxes from one, with the source's files and its
// running processes (a background counter, helpers.mjs). Every test kills its sandboxes and
// deletes its snapshots in `finally`.
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'

import { Sandbox, SandboxNotFoundError } from 'e2b'
import { phaseLabel } from './edge_client.mjs'
import {
  RUN_ID,
  T_LONG,
  assertContiguous,
  assertNoTicksWhilePaused,
  counterPids,
  env,
  killTracked,
  newSandbox,
  readTicks,
  rejectsWith,
  sh,
  sleep,
  startCounter,
  track,
  waitForTicksPast,
} from './helpers.mjs'

after(killTracked)

const P = phaseLabel()
const meta = (test) => ({ run: RUN_ID, file: 'tls_snapshots', test })
const other = () => ({ apiKey: env('COVE_OTHER_TEAM_KEY') })

async function killAll(ids) {
  await Promise.all(ids.filter(Boolean).map((id) => Sandbox.kill(id).catch(() => false)))
}

async function deleteAll(snapshotIds) {
  await Promise.all(snapshotIds.map((id) => Sandbox.deleteSnapshot(id).catch(() => false)))
}

/** Every snapshot id a listing returns (all pages). */
async function snapshotIds(paginator) {
  const ids = []
  while (paginator.hasNext) ids.push(...(await paginator.nextItems()).map((s) => s.snapshotId))
  return ids
}

/** The files under /home/user whose names start with `prefix`, sorted. */
async function filesStartingWith(sbx, prefix) {
  const out = await sh(sbx, `cd /home/user && ls -1 | grep '^${prefix}' | sort || true`)
  return out ? out.split('\n') : []
}

/** The source goes on as before: running, same endAt, its counter alive and ticking. */
async function assertSourceUnaffected(src, { pid, endAt, what }) {
  assert.equal(await src.isRunning(), true, `${what}: isRunning() of the source`)
  const info = await src.getInfo()
  assert.equal(info.state, 'running', `${what}: the source's state`)
  assert.ok(Math.abs(info.endAt.getTime() - endAt.getTime()) <= 1_000, `${what}: the source's endAt moved: ${endAt.toISOString()} → ${info.endAt.toISOString()}`)
  assert.deepEqual(await counterPids(src), [pid], `${what}: the source's counter`)
  const ticks = await readTicks(src)
  assertContiguous(ticks, `${what}: the source's ticks`)
  await waitForTicksPast(src, ticks.at(-1).n, `${what}: the source`)
}

/**
 * A sandbox restored from the source's checkpoint: the source's file, the counter with the
 * source's pid, its history up to the checkpoint, counting on in the new sandbox (ticks stamped
 * after `countsAfter`). With `stillBetween` [from, to]: it did not count in that window (the
 * checkpoint had been taken by `from`, the copy was asked for at `to`).
 */
async function assertRestoredCopy(child, { pid, ticksBefore, countsAfter, stillBetween, what }) {
  assert.equal(child.sandboxDomain, env('E2B_DOMAIN'), `${what}: sandboxDomain`)
  assert.equal(await child.isRunning(), true, `${what}: isRunning()`)
  assert.equal((await child.getInfo()).state, 'running', `${what}: state`)
  assert.equal(await child.files.read('/home/user/shared.txt'), 'from the source', `${what}: the source's file`)
  assert.deepEqual(await counterPids(child), [pid], `${what}: the source's counter, same pid`)
  const ticks = await readTicks(child)
  assertContiguous(ticks, what)
  assert.deepEqual(ticks.slice(0, ticksBefore.length), ticksBefore, `${what}: the counter's history up to the checkpoint`)
  if (stillBetween) assertNoTicksWhilePaused(ticks, stillBetween[0], stillBetween[1], what)
  const later = await waitForTicksPast(child, ticks.at(-1).n, what)
  assert.ok(later.at(-1).ms > countsAfter, `${what}: its new ticks are stamped after it was made`)
}

describe(`${P} snapshots`, () => {
  test('createSnapshot leaves the source running; Sandbox.create(snapshotId) restores an independent copy; list; delete', T_LONG, async () => {
    const ids = []
    const snaps = []
    try {
      const src = await newSandbox({ metadata: meta('snapshot-source'), timeoutMs: 300_000 })
      ids.push(src.sandboxId)
      const pid = await startCounter(src)
      await src.files.write('/home/user/shared.txt', 'from the source')
      const { endAt } = await src.getInfo()
      const ticksBefore = await readTicks(src)

      const snap = await src.createSnapshot()
      const checkpointDoneAt = Date.now()
      snaps.push(snap.snapshotId)
      assert.equal(typeof snap.snapshotId, 'string')
      assert.ok(snap.snapshotId.length > 0, 'snapshotId is empty')
      assert.ok(Array.isArray(snap.names), 'names is an array')
      await assertSourceUnaffected(src, { pid, endAt, what: 'after createSnapshot' })
      await sleep(2_000) // so that a copy that ran from the checkpoint on would show ticks in this window

      const createdAt = Date.now()
      const child = await newSandbox({ template: snap.snapshotId, metadata: meta('snapshot-child'), timeoutMs: 300_000 })
      ids.push(child.sandboxId)
      assert.notEqual(child.sandboxId, src.sandboxId, 'the child has its own id')
      await assertRestoredCopy(child, {
        pid,
        ticksBefore,
        countsAfter: createdAt,
        stillBetween: [checkpointDoneAt, createdAt],
        what: 'the snapshot child',
      })

      // Files: each side's writes stay on its side, including an overwrite of a shared file.
      await child.files.write('/home/user/child-only.txt', 'child')
      await child.files.write('/home/user/shared.txt', 'changed in the child')
      await src.files.write('/home/user/source-only.txt', 'source')
      assert.equal(await src.files.exists('/home/user/child-only.txt'), false, "the child's file shows in the source")
      assert.equal(await child.files.exists('/home/user/source-only.txt'), false, "the source's file shows in the child")
      assert.equal(await src.files.read('/home/user/shared.txt'), 'from the source', "the child's overwrite shows in the source")
      assert.equal(await child.files.read('/home/user/shared.txt'), 'changed in the child')
      // Processes: killing the child's counter leaves the source's alone.
      assert.equal(await child.commands.kill(pid), true)
      await sleep(500)
      assert.deepEqual(await counterPids(child), [], "the child's counter after kill")
      await assertSourceUnaffected(src, { pid, endAt, what: "after killing the child's counter" })

      // Listing: by source, from the source's handle, unfiltered; never for another team.
      assert.ok((await snapshotIds(Sandbox.listSnapshots({ sandboxId: src.sandboxId }))).includes(snap.snapshotId), 'listSnapshots({sandboxId})')
      assert.ok((await snapshotIds(src.listSnapshots())).includes(snap.snapshotId), 'sbx.listSnapshots()')
      assert.ok((await snapshotIds(Sandbox.listSnapshots())).includes(snap.snapshotId), 'listSnapshots()')
      assert.equal((await snapshotIds(Sandbox.listSnapshots({ sandboxId: child.sandboxId }))).includes(snap.snapshotId), false, 'listed under the child')
      assert.equal((await snapshotIds(Sandbox.listSnapshots(other()))).includes(snap.snapshotId), false, "another team's listSnapshots()")
      assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, other()), false, "another team's deleteSnapshot")
      // (Were it created, it is the other team's: killed with its key, which killTracked lacks.)
      const stolen = await Sandbox.create(snap.snapshotId, { ...other(), timeoutMs: 60_000 }).then(
        (s) => s.kill().then(() => s.sandboxId, () => s.sandboxId),
        () => null,
      )
      assert.equal(stolen, null, `another team created sandbox ${stolen} from our snapshot`)

      // Delete: true, then false; it is gone from the list and cannot be created from; the child
      // (its own sandbox) and the source go on.
      assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true, 'first deleteSnapshot')
      assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false, 'second deleteSnapshot')
      assert.equal((await snapshotIds(Sandbox.listSnapshots({ sandboxId: src.sandboxId }))).includes(snap.snapshotId), false, 'listed after delete')
      const late = await Sandbox.create(snap.snapshotId, { timeoutMs: 60_000 }).then(
        (s) => track(s).sandboxId,
        () => null,
      )
      assert.equal(late, null, `a sandbox ${late} was created from a deleted snapshot`)
      assert.equal(await sh(child, 'cat /home/user/child-only.txt'), 'child', 'the child after the snapshot was deleted')
      assert.equal(await sh(src, 'cat /home/user/source-only.txt'), 'source', 'the source after the snapshot was deleted')
    } finally {
      await deleteAll(snaps)
      await killAll(ids)
    }
  })
})

describe(`${P} fork`, () => {
  test('Sandbox.fork(id, {count: 3}): three independent copies with the files and process; the source runs on', T_LONG, async () => {
    const ids = []
    try {
      const src = await newSandbox({ metadata: meta('fork-source'), timeoutMs: 300_000 })
      ids.push(src.sandboxId)
      const pid = await startCounter(src)
      await src.files.write('/home/user/shared.txt', 'from the source')
      const { endAt } = await src.getInfo()
      const ticksBefore = await readTicks(src)

      const results = await Sandbox.fork(src.sandboxId, { count: 3, timeoutMs: 300_000 })
      const forkedAt = Date.now()
      const children = results.filter((r) => r instanceof Sandbox)
      for (const c of children) ids.push(track(c).sandboxId)
      const errors = results.filter((r) => !(r instanceof Sandbox)).map((e) => `${e?.name}: ${e?.message}`)
      assert.deepEqual(errors, [], 'forks that failed')
      assert.equal(children.length, 3, 'three forks')
      const childIds = children.map((c) => c.sandboxId)
      assert.equal(new Set([...childIds, src.sandboxId]).size, 4, `fork ids are not distinct: ${childIds} (source ${src.sandboxId})`)

      await assertSourceUnaffected(src, { pid, endAt, what: 'after fork' })
      // The children run from before fork() answers: no still window to check, only the history.
      for (const [k, c] of children.entries()) {
        await assertRestoredCopy(c, { pid, ticksBefore, countsAfter: forkedAt, what: `fork ${k}` })
      }

      // Each writes its own file and overwrites the shared one; nobody else sees it.
      for (const [k, c] of children.entries()) {
        await c.files.write(`/home/user/fork-${k}.txt`, `fork ${k}`)
        await c.files.write('/home/user/shared.txt', `changed in fork ${k}`)
      }
      for (const [k, c] of children.entries()) {
        assert.deepEqual(await filesStartingWith(c, 'fork-'), [`fork-${k}.txt`], `fork ${k} sees another fork's file`)
        assert.equal(await c.files.read('/home/user/shared.txt'), `changed in fork ${k}`, `fork ${k}'s shared.txt`)
      }
      assert.deepEqual(await filesStartingWith(src, 'fork-'), [], "a fork's file shows in the source")
      assert.equal(await src.files.read('/home/user/shared.txt'), 'from the source', "a fork's overwrite shows in the source")
      await src.files.write('/home/user/source-after-fork.txt', 'source')
      for (const [k, c] of children.entries()) {
        assert.equal(await c.files.exists('/home/user/source-after-fork.txt'), false, `the source's new file shows in fork ${k}`)
      }

      // Processes: killing fork 0's counter leaves the others' and the source's running.
      assert.equal(await children[0].commands.kill(pid), true)
      await sleep(500)
      assert.deepEqual(await counterPids(children[0]), [], "fork 0's counter after kill")
      for (const [k, c] of children.slice(1).entries()) {
        assert.deepEqual(await counterPids(c), [pid], `fork ${k + 1}'s counter after fork 0's was killed`)
        await waitForTicksPast(c, (await readTicks(c)).at(-1).n, `fork ${k + 1} after fork 0's counter was killed`)
      }
      await assertSourceUnaffected(src, { pid, endAt, what: "after killing fork 0's counter" })

      // Killing a fork leaves the rest alone.
      assert.equal(await children[1].kill(), true)
      assert.equal(await children[2].isRunning(), true)
      assert.equal(await src.isRunning(), true)
    } finally {
      await killAll(ids)
    }
  })
})

describe(`${P} snapshot and fork error paths`, () => {
  test('unknown, killed and other-team sandboxes: not found; unknown snapshot: delete false', T_LONG, async () => {
    const ids = []
    try {
      const unknown = `nope${RUN_ID.replace(/-/g, '')}`
      await rejectsWith(Sandbox.fork(unknown, { count: 1 }), SandboxNotFoundError, 'fork of an unknown id')
      await rejectsWith(Sandbox.createSnapshot(unknown), SandboxNotFoundError, 'createSnapshot of an unknown id')
      assert.equal(await Sandbox.deleteSnapshot(`nosnap${RUN_ID.replace(/-/g, '')}`), false, 'deleteSnapshot of an unknown id')

      const killed = await newSandbox({ metadata: meta('errors-killed'), timeoutMs: 120_000 })
      ids.push(killed.sandboxId)
      assert.equal(await killed.kill(), true)
      await rejectsWith(Sandbox.fork(killed.sandboxId, { count: 1 }), SandboxNotFoundError, 'fork of a killed sandbox')
      await rejectsWith(killed.createSnapshot(), SandboxNotFoundError, 'createSnapshot of a killed sandbox')

      const mine = await newSandbox({ metadata: meta('errors-team'), timeoutMs: 120_000 })
      ids.push(mine.sandboxId)
      await rejectsWith(Sandbox.fork(mine.sandboxId, { ...other(), count: 1 }), SandboxNotFoundError, "fork of another team's sandbox")
      await rejectsWith(Sandbox.createSnapshot(mine.sandboxId, other()), SandboxNotFoundError, "createSnapshot of another team's sandbox")
      assert.deepEqual(await snapshotIds(Sandbox.listSnapshots({ sandboxId: mine.sandboxId })), [], 'snapshots made by the refused calls')
      assert.equal(await mine.isRunning(), true)
    } finally {
      await killAll(ids)
    }
  })
})
