// Isolation between sandboxes and from the host: files, processes, network, the shim's own
// listeners, and the escape suite (tests/security/escape.sh) run as root inside a sandbox.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { after, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { CommandExitError, Sandbox } from 'e2b'
import {
  RUN_ID,
  T,
  T_LONG,
  curlFrom,
  env,
  eth0Address,
  hostIPv4Addresses,
  killTracked,
  newSandbox,
  pollUntil,
  sh,
} from './helpers.mjs'

after(killTracked)

const here = dirname(fileURLToPath(import.meta.url))
const ESCAPE_SCRIPT = join(here, '../../security/escape.sh')

let pairPromise
/** Two sandboxes: B runs `sleep 1234` and an HTTP server on 0.0.0.0:8000. */
function pair() {
  pairPromise ??= (async () => {
    const [a, b] = await Promise.all([
      newSandbox({ metadata: { run: RUN_ID, file: 'isolation', role: 'A' }, timeoutMs: 600_000 }),
      newSandbox({ metadata: { run: RUN_ID, file: 'isolation', role: 'B' }, timeoutMs: 600_000 }),
    ])
    await b.commands.run('sleep 1234', { background: true, timeoutMs: 0 })
    // httpd.py rather than `python3 -m http.server`: that one does a reverse DNS lookup on bind.
    await b.files.write('/tmp/httpd.py', readFileSync(join(here, 'httpd.py'), 'utf8'))
    await b.files.write('/tmp/www/index.html', 'cove-e2e-b\n')
    await b.commands.run('exec python3 /tmp/httpd.py /tmp/www 0.0.0.0 8000 /tmp/httpd.port', { background: true, timeoutMs: 0 })
    const bAddr = await eth0Address(b)
    assert.match(bAddr, /^10\.89\.\d+\.\d+$/, `B's eth0 address: ${JSON.stringify(bAddr)}`)
    // B serves itself: the negative checks from A below would mean nothing otherwise.
    await pollUntil(
      () => curlFrom(b, `http://${bAddr}:8000/`, { maxTime: 2 }),
      (r) => r.ok && r.code === '200' && r.body.includes('cove-e2e-b'),
      { timeoutMs: 15_000, intervalMs: 300, what: "B's HTTP server answering on its own eth0 address" },
    )
    return { a, b, bAddr }
  })()
  return pairPromise
}

describe('between sandboxes', () => {
  test('a file written in A does not exist in B', T, async () => {
    const { a, b } = await pair()
    const marker = `/tmp/cove-isolation-${RUN_ID}`
    await a.files.write(marker, 'from A')
    await a.files.write('/home/user/only-in-a.txt', 'A')
    assert.equal(await a.files.exists(marker), true)
    assert.equal(await b.files.exists(marker), false, 'B sees a file written in A')
    assert.equal(await b.files.exists('/home/user/only-in-a.txt'), false, 'B sees A\'s home')
    assert.equal(await sh(b, `test -e ${marker} && echo yes || echo no`), 'no')
  })

  test("ps in A shows only A's own processes, with the agent as pid 1", T, async () => {
    const { a, b } = await pair()
    // B's sleep is running (seen from B)...
    assert.match(await sh(b, 'ps -eo args'), /^sleep 1234$/m, "B's sleep 1234 is not running in B")
    // ...and invisible from A.
    const ps = await sh(a, 'ps -eo pid=,comm=,args=', { user: 'root' })
    const rows = ps.split('\n').map((l) => {
      const m = /^\s*(\d+)\s+(\S+)\s*(.*)$/.exec(l)
      assert.ok(m, `unparsable ps line ${JSON.stringify(l)}`)
      return { pid: Number(m[1]), comm: m[2], args: m[3] }
    })
    const show = `ps in A:\n${ps}`
    assert.ok(!rows.some((r) => /sleep 1234/.test(r.args)), `A sees B's sleep 1234\n${show}`)
    const init = rows.find((r) => r.pid === 1)
    assert.ok(init, `no pid 1 in A\n${show}`)
    assert.equal(init.comm, 'cove-agent', `pid 1 in A\n${show}`)
    // Only what runs in A now: the agent, the shell running ps, and ps (A runs nothing else).
    const allowed = new Set(['cove-agent', 'bash', 'ps'])
    const foreign = rows.filter((r) => !allowed.has(r.comm))
    assert.deepEqual(foreign, [], `processes in A that a sandbox did not start\n${show}`)
    assert.ok(rows.length < 20, `${rows.length} processes visible in A\n${show}`)
  })

  test('A cannot reach B over the network', T, async () => {
    const { a, bAddr } = await pair()
    for (const port of [8000, 49983]) {
      const r = await curlFrom(a, `http://${bAddr}:${port}/`, { maxTime: 3 })
      assert.equal(r.ok, false, `A reached B at ${bAddr}:${port} (HTTP ${r.code}, body ${JSON.stringify(r.body.slice(0, 100))})`)
    }
  })

  test('the outside host cannot open connections into a sandbox', T, async () => {
    const { bAddr } = await pair()
    const ns = env('COVE_OUTSIDE_NETNS')
    let code
    try {
      code = execFileSync('ip', ['netns', 'exec', ns, 'curl', '-s', '-o', '/dev/null', '-m', '3', '-w', '%{http_code}', `http://${bAddr}:8000/`], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    } catch (e) {
      code = `failed (exit ${e.status})`
    }
    assert.match(code, /^failed/, `the outside host reached B's server at ${bAddr}:8000 (HTTP ${code})`)
  })
})

describe('egress', () => {
  test('a sandbox reaches the outside host through the NAT', T, async () => {
    const { a } = await pair()
    const r = await curlFrom(a, env('COVE_OUTSIDE_URL'), { maxTime: 5 })
    assert.ok(r.ok, `curl ${env('COVE_OUTSIDE_URL')} from A failed: rc ${r.rc}: ${r.err}`)
    assert.equal(r.code, '200')
    assert.match(r.body, /cove-e2e-outside/)
  })

  test("a sandbox created right after another was killed (its address slot reused) has a working network", T, async () => {
    const outside = env('COVE_OUTSIDE_URL')
    for (let i = 0; i < 3; i++) {
      const first = await newSandbox({ metadata: { run: RUN_ID, role: `slot-first-${i}` }, timeoutMs: 120_000 })
      const firstAddr = await eth0Address(first)
      assert.equal(await Sandbox.kill(first.sandboxId), true)
      const second = await newSandbox({ metadata: { run: RUN_ID, role: `slot-second-${i}` }, timeoutMs: 120_000 })
      const secondAddr = await eth0Address(second)
      const r = await curlFrom(second, outside, { maxTime: 5 })
      if (!r.ok) {
        const links = await sh(second, 'ip -br addr; ip route', { user: 'root' }).catch((e) => `(ip failed: ${e.message})`)
        const hostLinks = execFileSync('ip', ['-br', 'link', 'show', 'master', 'cove-e2e'], { encoding: 'utf8' })
        assert.fail(
          `round ${i}: ${second.sandboxId} (eth0 ${JSON.stringify(secondAddr)}), created right after killing ` +
            `${first.sandboxId} (eth0 ${firstAddr}), cannot reach ${outside}: rc ${r.rc}: ${r.err}\n` +
            `inside:\n${links}\nhost ports on the bridge:\n${hostLinks}`,
        )
      }
      await Sandbox.kill(second.sandboxId)
    }
  })

  test('allowInternetAccess: false cannot reach the outside host, and fails fast', T, async () => {
    const c = await newSandbox({ allowInternetAccess: false, metadata: { run: RUN_ID, role: 'offline' }, timeoutMs: 120_000 })
    const info = await c.getInfo()
    assert.equal(info.allowInternetAccess, false, 'getInfo().allowInternetAccess')
    const r = await curlFrom(c, env('COVE_OUTSIDE_URL'), { maxTime: 10 })
    assert.equal(r.ok, false, `an offline sandbox reached the outside host (HTTP ${r.code})`)
    assert.ok(r.ms < 4_000, `curl took ${r.ms} ms to fail (rc ${r.rc}: ${r.err}); expected an immediate "unreachable"`)
    // The data plane still works for it (the agent is reached over the host channel).
    assert.equal(await sh(c, 'echo offline-ok'), 'offline-ok')
  })
})

describe('the host from inside', () => {
  test("no sandbox reaches the shim's listeners or any host address", T_LONG, async () => {
    const { a } = await pair()
    const c = await newSandbox({ allowInternetAccess: false, metadata: { run: RUN_ID, role: 'offline-host' }, timeoutMs: 120_000 })
    const canary = Number(env('COVE_HOST_CANARY_PORT'))
    const addrs = new Set([env('COVE_BRIDGE_ADDR'), env('COVE_OUTSIDE_HOST_ADDR'), ...hostIPv4Addresses()])
    // The canary listens on 0.0.0.0 of the host: reachable from the host on each address, so a
    // failure from inside is the sandbox's isolation and not an empty port.
    for (const addr of addrs) {
      const res = await fetch(`http://${addr}:${canary}/`, { signal: AbortSignal.timeout(3_000) }).catch((e) => e)
      assert.ok(res?.status === 200, `host-side check: canary not reachable at ${addr}:${canary} from the host (${res?.message ?? res?.status})`)
    }
    const ports = [Number(env('COVE_API_PORT')), Number(env('COVE_SANDBOX_PORT')), canary]
    const targets = []
    for (const addr of [...addrs, '127.0.0.1']) for (const port of ports) targets.push(`http://${addr}:${port}/`)
    const reached = []
    for (const [name, sbx] of [['A', a], ['offline C', c]]) {
      for (const url of targets) {
        const r = await curlFrom(sbx, url, { maxTime: 2 })
        if (r.ok) reached.push(`${name} → ${url} (HTTP ${r.code})`)
      }
    }
    assert.deepEqual(reached, [], 'sandboxes reached host listeners')
  })
})

describe('escape suite', () => {
  test('tests/security/escape.sh as root in a sandbox: nothing escapes', T_LONG, async () => {
    let script
    try {
      script = readFileSync(ESCAPE_SCRIPT, 'utf8')
    } catch (e) {
      assert.fail(`cannot read the escape suite ${ESCAPE_SCRIPT}: ${e.message}`)
    }
    const { a, bAddr } = await pair()
    await a.files.write('/tmp/escape.sh', script, { user: 'root' })
    const shimAddrs = [...new Set([env('COVE_BRIDGE_ADDR'), env('COVE_OUTSIDE_HOST_ADDR'), ...hostIPv4Addresses()])]
    const envs = {
      COVE_SHIM_ADDR: shimAddrs
        .flatMap((h) => [env('COVE_API_PORT'), env('COVE_SANDBOX_PORT'), env('COVE_HOST_CANARY_PORT')].map((p) => `${h}:${p}`))
        .join(' '),
      COVE_OTHER_SANDBOX_ADDR: `${bAddr}:49983 ${bAddr}:8000`,
    }
    let result
    try {
      result = await a.commands.run('bash /tmp/escape.sh', { user: 'root', envs, timeoutMs: 180_000 })
    } catch (e) {
      if (e instanceof CommandExitError) {
        const notOk = e.stdout.split('\n').filter((l) => l.startsWith('not ok'))
        assert.fail(
          `escape.sh exited ${e.exitCode}; ${notOk.length} attempt(s) got through:\n${notOk.join('\n')}\n` +
            `---- full output:\n${e.stdout}\n---- stderr:\n${e.stderr}`,
        )
      }
      throw e
    }
    const lines = result.stdout.split('\n').filter(Boolean)
    const oks = lines.filter((l) => l.startsWith('ok '))
    assert.ok(oks.length >= 10, `escape.sh reported only ${oks.length} refused attempts:\n${result.stdout}`)
    assert.ok(!lines.some((l) => l.startsWith('not ok')), `exit 0 but "not ok" lines:\n${result.stdout}`)
    // The sandbox survived its own escape attempts, and so did B.
    assert.equal(await sh(a, 'echo after-escape'), 'after-escape')
    assert.match(await sh(a, 'ps -eo args', { user: 'root' }), /cove-agent/)
  })
})
