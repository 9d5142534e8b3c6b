// Pause and resume through the TLS edge with the unchanged SDK (issue 8): the warm tier (cgroup
// freezer) and the cold tier (a CRIU checkpoint on disk, forced with `cove sandbox checkpoint`),
// a filesystem-only pause, auto-pause at the timeout, auto-resume on traffic, a shim crash while
// cold-paused, and the error paths. Every test makes its own sandboxes and kills them in
// `finally`; a background counter (helpers.mjs) shows whether processes ran, stood still or
// were replaced.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, describe, test } from 'node:test'

import { CommandExitError, Sandbox, SandboxNotFoundError, TimeoutError } from 'e2b'
import { apiHost, phaseLabel, portHost, protocols, request } from './edge_client.mjs'
import {
  RUN_ID,
  T_LONG,
  assertContiguous,
  assertNoTicksWhilePaused,
  checkpointToDisk,
  counterPids,
  coveStatus,
  env,
  killTracked,
  newSandbox,
  pollUntil,
  readTicks,
  rejectsWith,
  sh,
  sleep,
  startCounter,
  waitForTicksPast,
} from './helpers.mjs'

after(killTracked)

const P = phaseLabel()
const PAUSED_MS = 4_000 // how long each test leaves a sandbox paused: ~8 ticks of a running counter
const meta = (test) => ({ run: RUN_ID, file: 'tls_pause', test })

/** Kills the sandboxes (by id) a test made; never throws. */
async function killAll(...ids) {
  await Promise.all(ids.filter(Boolean).map((id) => Sandbox.kill(id).catch(() => false)))
}

/** The ids a list query returns (every page). */
async function listedIds(query) {
  const paginator = Sandbox.list({ query })
  const ids = []
  while (paginator.hasNext) ids.push(...(await paginator.nextItems()).map((s) => s.sandboxId))
  return ids
}

/** POST /v2/sandboxes/<id>/connect on api.<domain>, raw: {status, body (parsed when JSON)}. */
async function connectRaw(id, { protocol = 'http/1.1', apiKey = env('E2B_API_KEY') } = {}) {
  const body = JSON.stringify({ timeout: 300 })
  const res = await request(`https://${apiHost()}/v2/sandboxes/${id}/connect`, {
    method: 'POST',
    protocol,
    headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) },
    body,
  })
  let json
  try {
    json = JSON.parse(res.body)
  } catch {
    json = undefined
  }
  return { status: res.status, body: json, text: res.body }
}

/** SIGKILL the shim and start it again (shimctl.sh restart waits for "cove: ready"). */
async function restartShim() {
  await new Promise((resolve, reject) => {
    execFile(env('COVE_SHIMCTL'), ['restart'], { encoding: 'utf8', timeout: 60_000 }, (err, _stdout, stderr) => {
      if (err) reject(new assert.AssertionError({ message: `shimctl restart failed (exit ${err.code}): ${stderr || err.message}` }))
      else resolve()
    })
  })
}

/** Pause (and for 'cold' checkpoint to disk); returns when the pause had answered. */
async function pauseTo(sbx, tier) {
  assert.equal(await sbx.pause(), true, `pause() of running ${sbx.sandboxId}`)
  const pausedAt = Date.now()
  if (tier === 'cold') await checkpointToDisk(sbx.sandboxId)
  return pausedAt
}

/**
 * After a resume: the counter is the same process (pid, contiguous ticks), it did not tick
 * while paused, it ticks on, and the ticks from before the pause are unchanged.
 */
async function assertCounterSurvived(sbx, { pid, before, pausedAt, resumeAt, what }) {
  assert.deepEqual(await counterPids(sbx), [pid], `${what}: commands.list() shows the counter with its pid ${pid}`)
  const ticks = await readTicks(sbx)
  assert.deepEqual(ticks.slice(0, before.length), before, `${what}: the ticks from before the pause are unchanged`)
  assertContiguous(ticks, what)
  assertNoTicksWhilePaused(ticks, pausedAt, resumeAt, what)
  const later = await waitForTicksPast(sbx, ticks.at(-1).n, what)
  assertContiguous(later, `${what} (later)`)
  assert.ok(later.at(-1).ms > resumeAt, `${what}: the new ticks are stamped after the resume`)
}

describe(`${P} pause and connect keep processes and files`, () => {
  for (const tier of ['warm', 'cold']) {
    test(`${tier}: the background counter keeps its pid and counting, and stood still while paused`, T_LONG, async () => {
      let id
      try {
        const sbx = await newSandbox({ metadata: meta(`counter-${tier}`), timeoutMs: 300_000 })
        id = sbx.sandboxId
        const pid = await startCounter(sbx)
        await sbx.files.write('/home/user/note.txt', `written before the ${tier} pause`)
        const before = await readTicks(sbx)
        const pausedAt = await pauseTo(sbx, tier)
        await sleep(PAUSED_MS)
        assert.equal((await sbx.getInfo()).state, 'paused')
        const resumeAt = Date.now()
        const resumed = await Sandbox.connect(id, { timeoutMs: 300_000 })
        assert.equal(resumed.sandboxId, id)
        assert.equal(await resumed.isRunning(), true)
        assert.equal((await resumed.getInfo()).state, 'running')
        await assertCounterSurvived(resumed, { pid, before, pausedAt, resumeAt, what: `after the ${tier} pause` })
        assert.equal(await resumed.files.read('/home/user/note.txt'), `written before the ${tier} pause`)
        // The handle from before the pause works too (same id, same envd token).
        assert.equal(await sh(sbx, 'echo old-handle'), 'old-handle')
      } finally {
        await killAll(id)
      }
    })
  }

  test('files are intact after 3 pause/resume cycles (cold, warm, cold)', T_LONG, async () => {
    let id
    try {
      let sbx = await newSandbox({ metadata: meta('cycles'), timeoutMs: 300_000 })
      id = sbx.sandboxId
      // A tree with text, a 4 MiB random blob, many small files, a symlink, modes and a root-owned
      // file; its digest (contents, types, modes, owners, link targets) is taken right before each
      // pause, after that cycle's changes, and must be the same after the resume.
      await sh(
        sbx,
        'set -e; mkdir -p /home/user/keep/many && cd /home/user/keep && echo hello > text.txt && ' +
          'head -c 4194304 /dev/urandom > blob.bin && for i in $(seq 1 100); do echo "$i" > many/f$i; done && ' +
          'ln -s text.txt link && echo run > script.sh && chmod 0751 script.sh',
      )
      await sh(sbx, 'echo root-owned > /home/user/keep/root.txt && chmod 0600 /home/user/keep/root.txt', { user: 'root' })
      const digest = (s) =>
        sh(
          s,
          "cd /home/user/keep && { find . -printf '%p %y %m %u:%g %l\\n' | sort; find . -type f -print0 | sort -z | xargs -0 sha256sum; } | sha256sum",
          { user: 'root' },
        )
      const tiers = ['cold', 'warm', 'cold']
      for (const [k, tier] of tiers.entries()) {
        // This cycle's changes: a new file, a file written through the SDK, one removed, one appended.
        await sbx.files.write(`/home/user/keep/cycle-${k}.txt`, `cycle ${k} ${tier}`)
        await sh(sbx, `echo cycle-${k} >> /home/user/keep/text.txt && rm -f /home/user/keep/many/f${k + 1}`)
        const want = await digest(sbx)
        // Written last, with no sync: still in the page cache when the pause comes.
        await sh(sbx, `echo unsynced-${k} > /home/user/keep/unsynced-${k}.txt`)
        await pauseTo(sbx, tier)
        assert.equal((await sbx.getInfo()).state, 'paused', `cycle ${k} (${tier}): paused`)
        sbx = await Sandbox.connect(id, { timeoutMs: 300_000 })
        assert.equal((await sbx.getInfo()).state, 'running', `cycle ${k} (${tier}): running again`)
        assert.equal(await sh(sbx, `cat /home/user/keep/unsynced-${k}.txt && rm /home/user/keep/unsynced-${k}.txt`), `unsynced-${k}`)
        assert.equal(await digest(sbx), want, `cycle ${k} (${tier}): the tree changed across the pause`)
      }
      // What the cycles did, spelled out (the digest says it is all there; this says it is right).
      assert.equal(await sbx.files.read('/home/user/keep/text.txt'), 'hello\ncycle-0\ncycle-1\ncycle-2\n')
      assert.equal(await sh(sbx, 'ls /home/user/keep/many | wc -l'), '97')
      for (const [k, tier] of tiers.entries()) assert.equal(await sbx.files.read(`/home/user/keep/cycle-${k}.txt`), `cycle ${k} ${tier}`)
      assert.equal(await sh(sbx, 'readlink /home/user/keep/link; stat -c %a /home/user/keep/script.sh'), 'text.txt\n751')
      assert.equal(await sh(sbx, 'stat -c %U:%a /home/user/keep/root.txt'), 'root:600')
    } finally {
      await killAll(id)
    }
  })
})

describe(`${P} pause states`, () => {
  test('pause() twice → true then false; isRunning, getInfo and list show it paused; connect resumes', T_LONG, async () => {
    let id
    try {
      const metadata = meta('states')
      const sbx = await newSandbox({ metadata, timeoutMs: 300_000 })
      id = sbx.sandboxId
      assert.equal(await sbx.isRunning(), true)
      assert.deepEqual(await listedIds({ metadata, state: ['running'] }), [id], 'running list before the pause')
      assert.deepEqual(await listedIds({ metadata, state: ['paused'] }), [], 'paused list before the pause')

      assert.equal(await sbx.pause(), true, 'first pause')
      assert.equal(await sbx.pause(), false, 'second pause (already paused)')
      assert.equal(await Sandbox.pause(id), false, 'static pause of a paused sandbox')
      assert.equal(await sbx.isRunning(), false, 'isRunning() while paused')
      assert.equal((await sbx.getInfo()).state, 'paused')
      assert.equal((await Sandbox.getInfo(id)).state, 'paused')
      assert.deepEqual(await listedIds({ metadata, state: ['paused'] }), [id], "list state ['paused']")
      assert.deepEqual(await listedIds({ metadata, state: ['running'] }), [], "list state ['running'] while paused")
      const both = await Sandbox.list({ query: { metadata } }).nextItems()
      assert.deepEqual(both.map((s) => [s.sandboxId, s.state]), [[id, 'paused']], 'the default list (both states)')

      // Cold: the same answers.
      await checkpointToDisk(id)
      assert.equal(await sbx.pause(), false, 'pause of a cold-paused sandbox')
      assert.equal(await sbx.isRunning(), false, 'isRunning() while cold-paused')
      assert.equal((await sbx.getInfo()).state, 'paused')
      assert.deepEqual(await listedIds({ metadata, state: ['paused'] }), [id], "list state ['paused'] (cold)")

      const resumed = await Sandbox.connect(id)
      assert.equal(await resumed.isRunning(), true)
      assert.equal((await resumed.getInfo()).state, 'running')
      assert.deepEqual(await listedIds({ metadata, state: ['running'] }), [id], "list state ['running'] after connect")
      assert.deepEqual(await listedIds({ metadata, state: ['paused'] }), [], "list state ['paused'] after connect")
      // And it can be paused again.
      assert.equal(await resumed.pause(), true, 'pause after the resume')
      assert.equal(await resumed.isRunning(), false)
    } finally {
      await killAll(id)
    }
  })

  test('raw connect answers 201 for a paused sandbox and 200 for a running one', T_LONG, async () => {
    let id
    try {
      const sbx = await newSandbox({ metadata: meta('connect-status'), timeoutMs: 300_000 })
      id = sbx.sandboxId
      const running = await connectRaw(id)
      assert.equal(running.status, 200, `connect of a running sandbox: ${running.text}`)
      assert.equal(running.body?.sandboxID, id)

      assert.equal(await sbx.pause(), true)
      const resumed = await connectRaw(id)
      assert.equal(resumed.status, 201, `connect of a paused sandbox: ${resumed.text}`)
      assert.equal(resumed.body?.sandboxID, id)
      assert.match(resumed.body?.envdVersion ?? '', /^\d+\.\d+\.\d+/, 'envdVersion in the 201 answer')
      assert.equal(await sbx.isRunning(), true, 'running after the 201')
      assert.equal(await sh(sbx, 'echo resumed'), 'resumed')
      for (const protocol of protocols()) {
        const again = await connectRaw(id, { protocol })
        assert.equal(again.status, 200, `connect of the resumed sandbox over ${protocol}: ${again.text}`)
      }

      // Cold, through the instance method: the same object, running again.
      assert.equal(await sbx.pause(), true)
      await checkpointToDisk(id)
      assert.equal(await sbx.connect(), sbx, 'sbx.connect() resolves with the same object')
      assert.equal(await sbx.isRunning(), true)
      assert.equal(await sh(sbx, 'echo resumed-cold'), 'resumed-cold')
      assert.equal((await connectRaw(id)).status, 200)

      const unknown = await connectRaw(`nope${RUN_ID.replace(/-/g, '')}`)
      assert.equal(unknown.status, 404, `connect of an unknown id: ${unknown.text}`)
      assert.equal(unknown.body?.code, 404, `the error body's code: ${unknown.text}`)
    } finally {
      await killAll(id)
    }
  })
})

describe(`${P} filesystem-only pause and resume`, () => {
  test('pause({keepMemory: false}) keeps the files and replaces the processes', T_LONG, async () => {
    let id
    try {
      const sbx = await newSandbox({ metadata: meta('keep-memory-false'), timeoutMs: 300_000 })
      id = sbx.sandboxId
      const pid = await startCounter(sbx)
      await sbx.files.write('/home/user/fs-only.txt', 'kept on disk')
      const before = await readTicks(sbx)
      assert.equal(await sbx.pause({ keepMemory: false }), true)
      assert.equal((await sbx.getInfo()).state, 'paused')
      assert.equal(await sbx.isRunning(), false)

      const resumed = await Sandbox.connect(id, { timeoutMs: 300_000 })
      assert.equal(await sh(resumed, 'echo booted'), 'booted', 'the sandbox answers commands again')
      assert.equal((await resumed.getInfo()).state, 'running')
      assert.deepEqual(await counterPids(resumed), [], `the counter (pid ${pid}) is not running after a filesystem-only resume`)
      assert.equal(await resumed.files.read('/home/user/fs-only.txt'), 'kept on disk')
      // The counter's file is there with what it wrote, and nothing writes to it any more.
      const after1 = await readTicks(resumed)
      assert.ok(after1.length >= before.length, `counter log lost ticks: ${before.length} before, ${after1.length} after`)
      assert.deepEqual(after1.slice(0, before.length), before)
      await sleep(1_500)
      assert.deepEqual(await readTicks(resumed), after1, 'the counter log still grows: a counter runs')
    } finally {
      await killAll(id)
    }
  })

  test("connect({onResume: 'reboot'}): a no-op when running; from a memory pause it boots over the kept files", T_LONG, async () => {
    let id
    try {
      const sbx = await newSandbox({ metadata: meta('on-resume-reboot'), timeoutMs: 300_000 })
      id = sbx.sandboxId
      const pid = await startCounter(sbx)
      await sbx.files.write('/home/user/reboot.txt', 'kept across the reboot')
      await Sandbox.connect(id, { onResume: 'reboot' })
      assert.deepEqual(await counterPids(sbx), [pid], "onResume 'reboot' on a running sandbox changed its processes")

      assert.equal(await sbx.pause(), true)
      const resumed = await Sandbox.connect(id, { onResume: 'reboot', timeoutMs: 300_000 })
      assert.equal(await sh(resumed, 'echo rebooted'), 'rebooted')
      assert.deepEqual(await counterPids(resumed), [], "the counter survived onResume 'reboot'")
      assert.equal(await resumed.files.read('/home/user/reboot.txt'), 'kept across the reboot')
      const ticks = await readTicks(resumed)
      await sleep(1_500)
      assert.deepEqual(await readTicks(resumed), ticks, 'the counter log still grows after the reboot')
    } finally {
      await killAll(id)
    }
  })
})

describe(`${P} lifecycle: auto-pause and auto-resume`, () => {
  test("onTimeout 'pause': at the timeout the sandbox is paused, not killed; connect resumes it", T_LONG, async () => {
    let id
    try {
      const metadata = meta('auto-pause')
      const sbx = await newSandbox({ metadata, timeoutMs: 60_000, lifecycle: { onTimeout: 'pause' } })
      id = sbx.sandboxId
      assert.deepEqual((await sbx.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: false })
      const pid = await startCounter(sbx)
      await sbx.files.write('/home/user/auto.txt', 'before the timeout')
      const before = await readTicks(sbx)
      // The timeout set now is the one the reaper acts on.
      const setAt = Date.now()
      await sbx.setTimeout(3_000)
      assert.equal((await sbx.getInfo()).state, 'running', 'running right after setTimeout(3000)')
      const info = await pollUntil(() => sbx.getInfo(), (i) => i.state !== 'running', {
        timeoutMs: 20_000,
        intervalMs: 250,
        what: 'the sandbox leaves running after its 3 s timeout',
      })
      const pausedSeenAt = Date.now()
      assert.equal(info.state, 'paused')
      assert.ok(pausedSeenAt - setAt >= 2_500, `paused ${pausedSeenAt - setAt} ms after setTimeout(3000): too early`)
      // It stays paused (the reaper does not kill it later), and the edge does not serve it.
      await sleep(3_000)
      assert.equal((await sbx.getInfo()).state, 'paused', 'still paused 3 s later')
      assert.equal(await sbx.isRunning(), false)
      assert.deepEqual(await listedIds({ metadata, state: ['paused'] }), [id])

      const resumeAt = Date.now()
      const resumed = await Sandbox.connect(id, { timeoutMs: 120_000 })
      const resumedInfo = await resumed.getInfo()
      assert.equal(resumedInfo.state, 'running')
      assert.ok(resumedInfo.endAt.getTime() >= Date.now() + 100_000, `connect({timeoutMs: 120000}) set endAt ${resumedInfo.endAt.toISOString()}`)
      assert.equal(await resumed.files.read('/home/user/auto.txt'), 'before the timeout')
      // The reaper paused it somewhere after setAt; it stood still from the moment it was seen paused.
      await assertCounterSurvived(resumed, { pid, before, pausedAt: pausedSeenAt, resumeAt, what: 'after the auto-pause' })
    } finally {
      await killAll(id)
    }
  })

  for (const tier of ['warm', 'cold']) {
    test(`autoResume (${tier}): the first request through the edge resumes the sandbox and is served`, T_LONG, async () => {
      let id
      try {
        const sbx = await newSandbox({
          metadata: meta(`auto-resume-${tier}`),
          timeoutMs: 300_000,
          lifecycle: { onTimeout: 'pause', autoResume: true },
        })
        id = sbx.sandboxId
        assert.deepEqual((await sbx.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: true })
        const pid = await startCounter(sbx)
        await sbx.files.write('/home/user/auto-resume.txt', 'there')
        const before = await readTicks(sbx)
        const pausedAt = await pauseTo(sbx, tier)
        await sleep(PAUSED_MS)
        // The control plane does not resume it; only traffic to the sandbox does.
        assert.equal((await sbx.getInfo()).state, 'paused')
        const resumeAt = Date.now()
        const r = await sbx.commands.run('echo hi', { timeoutMs: 60_000 })
        assert.equal(r.stdout, 'hi\n', 'the request that woke the sandbox was served')
        assert.equal((await sbx.getInfo()).state, 'running')
        assert.equal(await sbx.files.read('/home/user/auto-resume.txt'), 'there')
        await assertCounterSurvived(sbx, { pid, before, pausedAt, resumeAt, what: `after the ${tier} auto-resume` })
      } finally {
        await killAll(id)
      }
    })
  }

  test('without autoResume a paused sandbox is not served (502) and stays paused until connect', T_LONG, async () => {
    let id
    try {
      const sbx = await newSandbox({ metadata: meta('no-auto-resume'), timeoutMs: 300_000 })
      id = sbx.sandboxId
      assert.equal((await sbx.getInfo()).lifecycle?.autoResume ?? false, false)
      await sbx.files.write('/home/user/still.txt', 'here')
      assert.equal(await sbx.pause(), true)

      assert.equal(await sbx.isRunning(), false)
      for (const protocol of protocols()) {
        const health = await request(`https://${portHost(id, 49983)}/health`, { protocol })
        assert.equal(health.status, 502, `GET /health of a paused sandbox over ${protocol}: ${health.body}`)
      }
      const cmdErr = await sbx.commands.run('echo hi', { requestTimeoutMs: 20_000 }).then(
        (r) => assert.fail(`a command in a paused sandbox was served: ${JSON.stringify(r)}`),
        (e) => e,
      )
      assert.ok(cmdErr instanceof Error && !(cmdErr instanceof CommandExitError), `commands.run while paused: ${cmdErr?.name}: ${cmdErr?.message}`)
      await rejectsWith(sbx.files.read('/home/user/still.txt'), TimeoutError, 'files.read while paused (502)')
      assert.equal((await sbx.getInfo()).state, 'paused', 'traffic resumed a sandbox without autoResume')

      await Sandbox.connect(id)
      assert.equal(await sh(sbx, 'echo served'), 'served')
      assert.equal(await sbx.files.read('/home/user/still.txt'), 'here')
    } finally {
      await killAll(id)
    }
  })
})

describe(`${P} a shim crash while cold-paused`, () => {
  test('kill -9 of the shim while cold-paused → restart → connect resumes it with its process and files', T_LONG, async () => {
    let id
    try {
      const metadata = meta('restart-cold')
      const sbx = await newSandbox({ metadata, timeoutMs: 600_000 })
      id = sbx.sandboxId
      const pid = await startCounter(sbx)
      await sbx.files.write('/home/user/crash.txt', 'survives the crash')
      const before = await readTicks(sbx)
      const pausedAt = await pauseTo(sbx, 'cold')

      await restartShim()

      const info = await Sandbox.getInfo(id)
      assert.equal(info.state, 'paused', 'the cold-paused sandbox is still paused after the restart')
      assert.deepEqual(info.metadata, metadata)
      assert.deepEqual(await listedIds({ metadata, state: ['paused'] }), [id])
      assert.equal(await sbx.isRunning(), false)
      // Long enough paused that a counter that kept running would show.
      await sleep(Math.max(0, pausedAt + PAUSED_MS - Date.now()))

      const resumeAt = Date.now()
      const resumed = await Sandbox.connect(id, { timeoutMs: 300_000 })
      assert.equal((await resumed.getInfo()).state, 'running')
      assert.equal(await resumed.files.read('/home/user/crash.txt'), 'survives the crash')
      await assertCounterSurvived(resumed, { pid, before, pausedAt, resumeAt, what: 'after the shim restart' })
      // Lifecycle works on it as on any other sandbox.
      assert.equal(await resumed.pause(), true)
      assert.equal(await Sandbox.kill(id), true)
      await rejectsWith(Sandbox.getInfo(id), SandboxNotFoundError, 'getInfo after kill')
    } finally {
      await killAll(id)
    }
  })
})

describe(`${P} error paths`, () => {
  test('pause of a killed sandbox, connect of an unknown id, another team: not found', T_LONG, async () => {
    let id
    let killed
    try {
      const victim = await newSandbox({ metadata: meta('errors-killed'), timeoutMs: 120_000 })
      killed = victim.sandboxId
      assert.equal(await victim.kill(), true)
      await rejectsWith(victim.pause(), SandboxNotFoundError, 'pause() of a killed sandbox')
      await rejectsWith(Sandbox.connect(killed), SandboxNotFoundError, 'connect of a killed sandbox')

      const unknown = `nope${RUN_ID.replace(/-/g, '')}`
      await rejectsWith(Sandbox.connect(unknown), SandboxNotFoundError, 'connect of an unknown id')
      await rejectsWith(Sandbox.pause(unknown), SandboxNotFoundError, 'pause of an unknown id')

      // Another team's key sees nothing of ours, and its calls change nothing.
      const sbx = await newSandbox({ metadata: meta('errors-team'), timeoutMs: 120_000 })
      id = sbx.sandboxId
      const other = { apiKey: env('COVE_OTHER_TEAM_KEY') }
      await rejectsWith(Sandbox.pause(id, other), SandboxNotFoundError, "pause of another team's sandbox")
      assert.equal((await sbx.getInfo()).state, 'running', "another team's pause paused it")
      assert.equal(await sbx.pause(), true)
      await rejectsWith(Sandbox.connect(id, other), SandboxNotFoundError, "connect of another team's paused sandbox")
      const raw = await connectRaw(id, { apiKey: env('COVE_OTHER_TEAM_KEY') })
      assert.equal(raw.status, 404, `raw connect with another team's key: ${raw.text}`)
      assert.equal((await sbx.getInfo()).state, 'paused', "another team's connect resumed it")

      // The operator CLI refuses to checkpoint what is not paused (and what does not exist).
      await Sandbox.connect(id)
      const running = await coveStatus(['sandbox', 'checkpoint', id])
      assert.notEqual(running.status, 0, `cove sandbox checkpoint of a running sandbox succeeded: ${running.stdout}`)
      assert.equal(await sh(sbx, 'echo still-running'), 'still-running')
      const missing = await coveStatus(['sandbox', 'checkpoint', unknown])
      assert.notEqual(missing.status, 0, 'cove sandbox checkpoint of an unknown id succeeded')
    } finally {
      await killAll(id, killed)
    }
  })
})
