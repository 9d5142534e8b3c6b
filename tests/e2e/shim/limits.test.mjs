// Resource limits of a sandbox (run.sh: memory_mb 256, disk_size_mb 512, pids_max 512):
// memory, processes (and a fork bomb), disk.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, describe, test } from 'node:test'

import { NotEnoughSpaceError } from 'e2b'
import {
  RUN_ID,
  T,
  T_LONG,
  killTracked,
  newSandbox,
  pollUntil,
  settleWithin,
  sh,
  shStatus,
  sleep,
} from './helpers.mjs'

after(killTracked)

const PIDS_MAX = 512
const MiB = 1024 * 1024

/** python3 that allocates `mib` MiB and touches every page; prints "survived" if it can. */
const allocate = (mib) =>
  `python3 -c 'b = bytearray(${mib} * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint("survived")'`

describe('memory', () => {
  test('a process allocating beyond memory_mb is killed; the agent survives', T, async () => {
    const sbx = await newSandbox({ metadata: { run: RUN_ID, file: 'limits', what: 'memory' }, timeoutMs: 300_000 })
    // Within the limit it works: the limit is not absurdly low.
    assert.equal(await sh(sbx, allocate(120), { timeoutMs: 60_000 }), 'survived', '120 MiB in a 256 MiB sandbox')
    // Beyond it the process dies (OOM kill) or its allocation fails.
    const r = await shStatus(sbx, allocate(400), { timeoutMs: 60_000 })
    assert.notEqual(r.exitCode, 0, `allocating 400 MiB in a 256 MiB sandbox succeeded: ${JSON.stringify(r)}`)
    assert.ok(!r.stdout.includes('survived'), `400 MiB survived: ${JSON.stringify(r)}`)
    // The agent is still PID 1 and answers.
    assert.equal(await sh(sbx, 'echo alive'), 'alive')
    assert.equal(await sh(sbx, 'ps -o comm= -p 1'), 'cove-agent')
    assert.equal(await sbx.isRunning(), true)
    // And the limit applies to root too.
    const root = await shStatus(sbx, allocate(400), { timeoutMs: 60_000, user: 'root' })
    assert.notEqual(root.exitCode, 0, `root allocated 400 MiB: ${JSON.stringify(root)}`)
    assert.equal(await sh(sbx, 'echo alive'), 'alive')
  })
})

describe('processes', () => {
  let pidsLimitHolds = false

  test(`pids_max ${PIDS_MAX}: spawning stops with EAGAIN below the limit`, T, async () => {
    const sbx = await newSandbox({ metadata: { run: RUN_ID, file: 'limits', what: 'pids' }, timeoutMs: 300_000 })
    // posix_spawn (vfork-like: no memory copied) of sleepers until the kernel refuses; at most
    // 700, so an unenforced limit cannot run away. Then all of them are killed and reaped.
    const script = [
      'import os, signal',
      'kids, err = [], ""',
      'try:',
      '    for _ in range(700):',
      '        kids.append(os.posix_spawn("/bin/sleep", ["sleep", "120"], os.environ))',
      'except OSError as e:',
      '    err = e.strerror',
      'for k in kids: os.kill(k, signal.SIGKILL)',
      'for k in kids: os.waitpid(k, 0)',
      'print(len(kids), err)',
    ].join('\n')
    const out = await sh(sbx, `python3 -c '${script}'`, { timeoutMs: 60_000 })
    const m = /^(\d+) (.*)$/.exec(out)
    assert.ok(m, `unexpected output ${JSON.stringify(out)}`)
    const spawned = Number(m[1])
    assert.ok(spawned < PIDS_MAX, `spawned ${spawned} processes (limit ${PIDS_MAX}); error: ${JSON.stringify(m[2])}`)
    assert.match(m[2], /Resource temporarily unavailable/, `spawning stopped after ${spawned} for another reason`)
    assert.ok(spawned >= PIDS_MAX - 100, `only ${spawned} spawned before EAGAIN: the limit is lower than ${PIDS_MAX}?`)
    pidsLimitHolds = true
    // Everything is usable again.
    assert.equal(await sh(sbx, 'echo ok'), 'ok')
  })

  test('a fork bomb is contained: the agent keeps answering and recovers', T_LONG, async () => {
    // Never run a fork bomb without a proven limit: it would take the host with it.
    assert.ok(pidsLimitHolds, 'refusing to run a fork bomb: the pids_max test did not pass')
    const sbx = await newSandbox({ metadata: { run: RUN_ID, file: 'limits', what: 'forkbomb' }, timeoutMs: 300_000 })
    // The controller starts the bomb in its own process group, samples the number of processes
    // for 20 s without forking, then kills the group until nothing is left of it.
    const controller = [
      'import os, signal, subprocess, time',
      'p = subprocess.Popen(["bash", "-c", ":(){ :|:& };:"], start_new_session=True,',
      '                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)',
      'peak, end = 0, time.time() + 20',
      'while time.time() < end:',
      '    peak = max(peak, sum(1 for d in os.listdir("/proc") if d.isdigit()))',
      '    time.sleep(0.2)',
      'for _ in range(100):',
      '    try: os.killpg(p.pid, signal.SIGKILL)',
      '    except ProcessLookupError: break',
      '    time.sleep(0.1)',
      'print("peak", peak, flush=True)',
    ].join('\n')
    const bomb = await sbx.commands.run(`python3 -c '${controller}'`, { background: true, timeoutMs: 120_000 })
    await sleep(3_000)

    // During the bomb: the agent answers calls that need no new process, and the host is fine.
    const during = {}
    for (const [name, call] of [
      ['isRunning', () => sbx.isRunning()],
      ['files.write', () => sbx.files.write('/tmp/during-bomb', 'x')],
      ['files.read', () => sbx.files.read('/tmp/during-bomb')],
      ['commands.list', () => sbx.commands.list()],
    ]) {
      const t0 = Date.now()
      const r = await settleWithin(call(), 5_000, `${name} during the fork bomb`)
      assert.ok(r.ok, `${name} during the fork bomb failed: ${r.error?.name}: ${r.error?.message}`)
      during[name] = Date.now() - t0
    }
    execFileSync('true') // the host can still start processes
    // commands.run needs a free pid: the agent must still get one within a few seconds. Each uid's
    // processes are capped below pids_max (the agent's -process-limit), so the bomb's own uid is
    // out of processes by design while root keeps a reserve: root's command is what ends a bomb.
    const deadline = Date.now() + 8_000
    let ran, lastErr
    while (!ran && Date.now() < deadline) {
      ran = await sbx.commands.run('echo ok', { timeoutMs: 5_000, user: 'root' }).catch((e) => {
        lastErr = e
        return undefined
      })
      if (!ran) await sleep(250)
    }
    // Checked last, so that the containment and recovery checks below run either way.
    const duringBomb = ran
      ? null
      : `commands.run('echo ok', {user: 'root'}) never succeeded during the fork bomb (8 s of retries): ${lastErr?.name}: ${lastErr?.message}`

    // The bomb really ran and really was capped.
    const result = await settleWithin(bomb.wait(), 60_000, 'the fork bomb controller')
    assert.ok(result.ok, `the controller failed: ${result.error?.name}: ${result.error?.message} ${result.error?.stderr ?? ''}`)
    const peak = Number(/peak (\d+)/.exec(result.value.stdout)?.[1])
    assert.ok(peak > 200, `peak ${peak} processes: the bomb did not run (output ${JSON.stringify(result.value.stdout)})`)
    assert.ok(peak <= PIDS_MAX, `peak ${peak} processes exceeds pids_max ${PIDS_MAX}`)

    // Afterwards: orphans were reaped by PID 1 and the sandbox is fully usable again.
    await pollUntil(
      () => sh(sbx, 'ls /proc | grep -c "^[0-9]*$"', { timeoutMs: 10_000 }).catch(() => 'error'),
      (n) => Number(n) < 30,
      { timeoutMs: 20_000, intervalMs: 500, what: 'processes back below 30 after the bomb (zombies reaped)' },
    )
    assert.equal(await sh(sbx, 'echo recovered'), 'recovered')

    // A fork bomb must not starve the agent of pids: the sandbox's owner needs commands.run to
    // find and stop it (e.g. `pkill -u user`). Needs headroom for the agent that user processes
    // cannot take (such as a lower pids.max on a child cgroup for everything the agent starts).
    assert.equal(duringBomb, null, duringBomb ?? '')
    assert.equal(ran.stdout, 'ok\n')
  })
})

describe('disk', () => {
  test('a full disk: files.write is NotEnoughSpaceError, dd says No space left; freeing it recovers', T_LONG, async () => {
    const sbx = await newSandbox({ metadata: { run: RUN_ID, file: 'limits', what: 'disk' }, timeoutMs: 300_000 })
    const total = Number(await sh(sbx, 'df --output=size -B1 /home/user | tail -1'))
    assert.ok(total >= 0.8 * 512 * MiB && total <= 1.05 * 512 * MiB, `disk size ${total} bytes, expected ≈ 512 MiB`)
    // Fill it as root: fallocate what df calls available, then dd into the root-reserved rest.
    const fill =
      'avail=$(df --output=avail -B1 /home/user | tail -1); ' +
      'fallocate -l "$avail" /home/user/fill 2>/dev/null || true; ' +
      'dd if=/dev/zero of=/home/user/fill2 bs=64K 2>/dev/null; sync; ' +
      'df --output=avail -B1 /home/user | tail -1'
    const left = Number(await sh(sbx, `${fill} || true`, { user: 'root', timeoutMs: 120_000 }))
    assert.ok(left < MiB, `${left} bytes still available after filling the disk`)

    const err = await sbx.files.write('/home/user/x', new Uint8Array(MiB).fill(7)).then(
      () => assert.fail('files.write of 1 MiB to a full disk succeeded'),
      (e) => e,
    )
    assert.ok(err instanceof NotEnoughSpaceError, `files.write on a full disk: ${err?.constructor?.name}: ${err?.message}`)

    const dd = await shStatus(sbx, 'dd if=/dev/zero of=/home/user/y bs=1M count=1')
    assert.notEqual(dd.exitCode, 0, `dd to a full disk succeeded: ${JSON.stringify(dd)}`)
    assert.match(dd.stderr, /No space left on device/)

    // The agent itself is fine with a full disk, and freeing space recovers it.
    assert.equal(await sh(sbx, 'echo alive'), 'alive')
    await sh(sbx, 'rm -f /home/user/fill /home/user/fill2 /home/user/x /home/user/y', { user: 'root' })
    await sbx.files.write('/home/user/x', new Uint8Array(MiB).fill(7))
    assert.equal(await sh(sbx, 'stat -c %s /home/user/x'), String(MiB))
    assert.equal(await sh(sbx, 'dd if=/dev/zero of=/home/user/y bs=1M count=1 2>/dev/null && echo written'), 'written')
  })
})
