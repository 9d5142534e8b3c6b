// What a user does inside a real sandbox, through the shim's data plane: identity, commands,
// files, PTY and directory watches. Shared by flows.test.mjs (plain HTTP, E2B_API_URL /
// E2B_SANDBOX_URL) and tls_flows.test.mjs (the TLS edge, E2B_DOMAIN only): the same flows, a
// different client environment.
import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { describe, test } from 'node:test'

import { CommandExitError, FileNotFoundError } from 'e2b'
import { T, pollUntil, sh, shStatus } from './helpers.mjs'

/**
 * Defines the flows' describe blocks. `sandbox()` returns (a promise of) the one sandbox they all
 * use; `label` prefixes the block names so two client setups are told apart in the TAP output.
 */
export function describeUserFlows(sandbox, label = '') {
  const titled = (n) => (label ? `${label} ${n}` : n)
  describe(titled('identity'), () => {
    test('commands run as user in /home/user; sudo works without a password', T, async () => {
      const sbx = await sandbox()
      assert.equal(await sh(sbx, 'whoami'), 'user')
      assert.equal(await sh(sbx, 'pwd'), '/home/user')
      assert.equal(await sh(sbx, 'echo $HOME'), '/home/user')
      assert.equal(await sh(sbx, 'sudo -n id -u'), '0')
      assert.equal(await sh(sbx, 'whoami', { user: 'root' }), 'root')
      assert.equal(await sh(sbx, 'echo $HOME', { user: 'root' }), '/root')
      // Its own UTS namespace: not the host's name.
      const name = await sh(sbx, 'hostname')
      assert.ok(name.length > 0)
      assert.notEqual(name, hostname(), 'the sandbox has the host\'s hostname')
    })
  })

  describe(titled('commands'), () => {
    test('stdout, stderr and exit codes', T, async () => {
      const sbx = await sandbox()
      const r = await sbx.commands.run('echo out; echo err >&2')
      assert.equal(r.exitCode, 0)
      assert.equal(r.stdout, 'out\n')
      assert.equal(r.stderr, 'err\n')

      const err = await sbx.commands.run('echo partial; echo bad >&2; exit 7').then(
        () => assert.fail('exit 7 resolved'),
        (e) => e,
      )
      assert.ok(err instanceof CommandExitError, `got ${err?.constructor?.name}: ${err?.message}`)
      assert.equal(err.exitCode, 7)
      assert.equal(err.stdout, 'partial\n')
      assert.equal(err.stderr, 'bad\n')

      const big = await sbx.commands.run('seq 1 50000')
      assert.equal(big.stdout.length, Array.from({ length: 50000 }, (_, i) => `${i + 1}\n`).join('').length)
      assert.ok(big.stdout.endsWith('49999\n50000\n'))

      const cwd = await sh(sbx, 'pwd', { cwd: '/tmp' })
      assert.equal(cwd, '/tmp')
    })

    test('background command: listed, killed, gone', T, async () => {
      const sbx = await sandbox()
      const h = await sbx.commands.run('sleep 300', { background: true })
      assert.ok(h.pid > 0, `pid ${h.pid}`)
      const listed = await sbx.commands.list()
      const mine = listed.find((p) => p.pid === h.pid)
      assert.ok(mine, `pid ${h.pid} not in commands.list(): ${JSON.stringify(listed)}`)
      assert.deepEqual(mine.args.at(-1), 'sleep 300')
      assert.equal(await h.kill(), true, 'kill() of a running command')
      await assert.rejects(h.wait(), (e) => {
        assert.ok(e instanceof CommandExitError, `wait() after kill: ${e?.constructor?.name}: ${e?.message}`)
        return true
      })
      await pollUntil(
        () => sbx.commands.list(),
        (l) => !l.some((p) => p.pid === h.pid),
        { timeoutMs: 5_000, intervalMs: 200, what: `pid ${h.pid} gone from commands.list()` },
      )
      assert.equal(await sbx.commands.kill(h.pid), false, 'kill() of a finished command')
    })

    test('sendStdin reaches a background cat, unbuffered', T, async () => {
      const sbx = await sandbox()
      const h = await sbx.commands.run('cat', { background: true, stdin: true })
      try {
        await sbx.commands.sendStdin(h.pid, 'Hello, stdin!')
        await pollUntil(() => h.stdout, (s) => s.includes('Hello, stdin!'), {
          timeoutMs: 3_000,
          what: 'stdin echoed by cat',
        })
        await sbx.commands.sendStdin(h.pid, ' and more\n')
        await pollUntil(() => h.stdout, (s) => s === 'Hello, stdin! and more\n', { timeoutMs: 3_000, what: 'second input' })
        await sbx.commands.closeStdin(h.pid)
        const r = await h.wait()
        assert.equal(r.exitCode, 0)
        assert.equal(r.stdout, 'Hello, stdin! and more\n')
      } finally {
        await sbx.commands.kill(h.pid).catch(() => {})
      }
    })

    test('a command timeout kills the command', T, async () => {
      const sbx = await sandbox()
      await assert.rejects(sbx.commands.run('sleep 20; echo done', { timeoutMs: 1_500 }), (e) => {
        assert.equal(e?.name, 'TimeoutError', `got ${e?.name}: ${e?.message}`)
        return true
      })
    })
  })

  describe(titled('files'), () => {
    test('write and read text and bytes', T, async () => {
      const sbx = await sandbox()
      const info = await sbx.files.write('/home/user/flows/hello.txt', 'héllo ✓\n')
      assert.equal(info.path, '/home/user/flows/hello.txt')
      assert.equal(info.name, 'hello.txt')
      assert.equal(await sbx.files.read('/home/user/flows/hello.txt'), 'héllo ✓\n')
      assert.equal(await sh(sbx, 'stat -c %U /home/user/flows/hello.txt'), 'user', 'written files belong to user')

      const bytes = new Uint8Array(256 * 64).map((_, i) => (i * 7 + 3) & 0xff)
      await sbx.files.write('/home/user/flows/blob.bin', bytes)
      const back = await sbx.files.read('/home/user/flows/blob.bin', { format: 'bytes' })
      assert.deepEqual(Buffer.from(back), Buffer.from(bytes))
      assert.equal(await sh(sbx, 'stat -c %s /home/user/flows/blob.bin'), String(bytes.length))

      await sbx.files.write('/home/user/flows/empty', '')
      assert.equal(await sbx.files.read('/home/user/flows/empty'), '')

      await assert.rejects(sbx.files.read('/home/user/flows/missing'), (e) => {
        assert.ok(e instanceof FileNotFoundError, `got ${e?.constructor?.name}: ${e?.message}`)
        return true
      })
    })

    test('list, exists, makeDir, rename, remove', T, async () => {
      const sbx = await sandbox()
      const dir = '/home/user/flows-ops'
      assert.equal(await sbx.files.makeDir(dir), true, 'makeDir new')
      assert.equal(await sbx.files.makeDir(dir), false, 'makeDir existing')
      await sbx.files.write(`${dir}/a.txt`, 'a')
      await sbx.files.makeDir(`${dir}/sub`)
      const entries = await sbx.files.list(dir)
      assert.deepEqual(
        entries.map((e) => [e.name, e.type]).sort(),
        [
          ['a.txt', 'file'],
          ['sub', 'dir'],
        ],
      )
      const a = entries.find((e) => e.name === 'a.txt')
      assert.equal(a.path, `${dir}/a.txt`)
      assert.equal(a.size, 1)
      assert.equal(await sbx.files.exists(`${dir}/a.txt`), true)
      assert.equal(await sbx.files.exists(`${dir}/nope`), false)

      const moved = await sbx.files.rename(`${dir}/a.txt`, `${dir}/sub/b.txt`)
      assert.equal(moved.path, `${dir}/sub/b.txt`)
      assert.equal(await sbx.files.exists(`${dir}/a.txt`), false)
      assert.equal(await sbx.files.read(`${dir}/sub/b.txt`), 'a')

      await sbx.files.remove(`${dir}/sub`)
      assert.equal(await sbx.files.exists(`${dir}/sub`), false)
      assert.equal(await sh(sbx, `ls -A ${dir}`), '')
    })

    test('relative paths resolve under /home/user; user root under /root', T, async () => {
      const sbx = await sandbox()
      await sbx.files.write('flows-rel.txt', 'relative')
      assert.equal(await sh(sbx, 'cat /home/user/flows-rel.txt'), 'relative')
      assert.equal(await sbx.files.read('flows-rel.txt'), 'relative')

      await sbx.files.write('flows-root.txt', 'as root', { user: 'root' })
      assert.equal(await sh(sbx, 'cat /root/flows-root.txt; echo; stat -c %U /root/flows-root.txt', { user: 'root' }), 'as root\nroot')
      assert.equal(await sbx.files.read('/root/flows-root.txt', { user: 'root' }), 'as root')
      assert.equal(await sbx.files.exists('/home/user/flows-root.txt'), false)

      // Processes of user cannot read root's home.
      const st = await shStatus(sbx, 'cat /root/flows-root.txt')
      assert.notEqual(st.exitCode, 0, 'cat /root/... as user succeeded')
    })
  })

  describe(titled('pty'), () => {
    test('create, type a command, see its output, kill', T, async () => {
      const sbx = await sandbox()
      const decoder = new TextDecoder()
      let out = ''
      const h = await sbx.pty.create({ cols: 100, rows: 30, onData: (d) => (out += decoder.decode(d, { stream: true })) })
      try {
        assert.ok(h.pid > 0)
        await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo hi-$((40 + 2)); tty\n'))
        await pollUntil(() => out, (s) => s.includes('hi-42'), { timeoutMs: 5_000, what: `pty output (got ${JSON.stringify(out.slice(-200))})` })
        await pollUntil(() => out, (s) => /\/dev\/pts\/\d+/.test(s), { timeoutMs: 5_000, what: 'tty prints a pts' })
        await sbx.pty.resize(h.pid, { cols: 120, rows: 40 })
        await sbx.pty.sendInput(h.pid, new TextEncoder().encode('stty size\n'))
        await pollUntil(() => out, (s) => s.includes('40 120'), { timeoutMs: 5_000, what: 'stty size after resize' })
      } finally {
        assert.equal(await sbx.pty.kill(h.pid), true, 'pty.kill')
      }
      await assert.rejects(h.wait())
    })
  })

  describe(titled('watchDir'), () => {
    test('create and write events for a new file', T, async () => {
      const sbx = await sandbox()
      const dir = '/home/user/flows-watch'
      await sbx.files.makeDir(dir)
      const events = []
      const w = await sbx.files.watchDir(dir, (e) => events.push(e))
      try {
        await sbx.files.write(`${dir}/f.txt`, 'one')
        await sh(sbx, `echo two >> ${dir}/g.txt`)
        const show = () => JSON.stringify(events.map((e) => [e.name, e.type]))
        await pollUntil(
          () => events,
          (ev) =>
            ev.some((e) => e.name === 'f.txt' && e.type === 'create') &&
            ev.some((e) => e.name === 'f.txt' && e.type === 'write') &&
            ev.some((e) => e.name === 'g.txt' && e.type === 'create'),
          { timeoutMs: 5_000, what: 'create/write events for f.txt and g.txt' },
        ).catch((e) => assert.fail(`${e.message}; events: ${show()}`))
      } finally {
        await w.stop()
      }
    })
  })
}
