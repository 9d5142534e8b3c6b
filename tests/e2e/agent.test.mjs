// Agent behaviour below the SDK's surface that users still feel: keepalives on silent streams,
// stream deadlines that do not kill a process, orphan reaping as PID 1, resilience when a user
// exhausts its process limit, unknown users, and the REST endpoints the orchestrator uses.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { AuthenticationError } from 'e2b'
import { AGENT_URL, TEST_TIMEOUT, createSandbox, lazy, sh, sleep } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }
const sandbox = lazy(createSandbox)

function envelope(obj) {
  const payload = Buffer.from(JSON.stringify(obj))
  const head = Buffer.alloc(5)
  head.writeUInt32BE(payload.length, 1)
  return Buffer.concat([head, payload])
}

/** Splits a Connect streaming body into {flags, json} frames. */
function frames(buf) {
  const out = []
  for (let off = 0; off + 5 <= buf.length; ) {
    const len = buf.readUInt32BE(off + 1)
    out.push({ flags: buf[off], json: JSON.parse(buf.subarray(off + 5, off + 5 + len).toString()) })
    off += 5 + len
  }
  return out
}

async function stream(method, body, headers = {}) {
  const res = await fetch(`${AGENT_URL}/process.Process/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/connect+json', 'connect-protocol-version': '1', ...headers },
    body: envelope(body),
  })
  assert.equal(res.status, 200)
  return frames(Buffer.from(await res.arrayBuffer()))
}

describe('agent', () => {
  test('a silent stream gets keepalives at the requested interval', T, async () => {
    const got = await stream('Start', { process: { cmd: '/bin/sleep', args: ['2.5'] } }, { 'keepalive-ping-interval': '1' })
    const kinds = got.map((f) => (f.flags === 2 ? 'end-stream' : Object.keys(f.json.event)[0]))
    assert.equal(kinds[0], 'start')
    assert.ok(kinds.filter((k) => k === 'keepalive').length >= 2, `kinds: ${kinds}`)
    assert.deepEqual(kinds.slice(-2), ['end', 'end-stream'])
    assert.deepEqual(got.at(-1).json, {})
  })

  test('Connect-Timeout-Ms on Connect ends that stream only; the process lives on', T, async () => {
    const sbx = await sandbox()
    const handle = await sbx.commands.run('sleep 20', { background: true })
    const got = await stream('Connect', { process: { pid: handle.pid } }, { 'connect-timeout-ms': '500' })
    assert.equal(got[0].json.event.start.pid, handle.pid)
    assert.deepEqual(got.at(-1), { flags: 2, json: { error: { code: 'deadline_exceeded', message: 'context deadline exceeded' } } })
    assert.ok((await sbx.commands.list()).some((p) => p.pid === handle.pid), 'process died with the stream deadline')
    assert.equal(await sbx.commands.kill(handle.pid), true)
  })

  test('orphans re-parented to the agent (PID 1) are reaped', T, async () => {
    const sbx = await sandbox()
    // The inner subshell exits at once; its `sleep 0.3` child is orphaned to PID 1.
    await sh(sbx, "bash -c '(sleep 0.3 &) ; exit 0'")
    await sleep(1000)
    const zombies = await sh(sbx, "ps -eo stat=,pid=,comm= | awk '$1 ~ /^Z/' || true", { user: 'root' })
    assert.equal(zombies, '', `zombies left behind: ${zombies}`)
    assert.equal(await sh(sbx, 'ps -o comm= -p 1', { user: 'root' }), 'cove-agent')
  })

  test('a user that exhausts its process limit gets errors; the agent keeps answering', T, async () => {
    const sbx = await sandbox()
    // Forks until the kernel says EAGAIN (RLIMIT_NPROC counts every process of uid 1000).
    const script = [
      'import os, resource, time',
      'resource.setrlimit(resource.RLIMIT_NPROC, (30, 30))',
      'kids, err = [], None',
      'for i in range(200):',
      '    try:',
      '        pid = os.fork()',
      '    except OSError as e:',
      '        err = e.errno',
      '        break',
      '    if pid == 0:',
      '        time.sleep(1)',
      '        os._exit(0)',
      '    kids.append(pid)',
      'print(len(kids), err)',
      'for k in kids:',
      '    os.waitpid(k, 0)',
    ].join('\n')
    const r = await sbx.commands.run(`python3 -c '${script}'`, { timeoutMs: 20_000 })
    const [forked, errno] = r.stdout.trim().split(' ')
    assert.equal(errno, '11', `expected EAGAIN, got: ${r.stdout}`)
    assert.ok(Number(forked) > 0 && Number(forked) < 200, r.stdout)
    const health = await fetch(`${AGENT_URL}/health`)
    assert.equal(health.status, 204)
    assert.equal(await sh(sbx, 'echo still-here'), 'still-here')
  })

  test('an unknown user is refused with AuthenticationError', T, async () => {
    const sbx = await sandbox()
    await assert.rejects(sbx.commands.run('id', { user: 'no-such-user' }), (e) => {
      assert.ok(e instanceof AuthenticationError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /invalid username: 'no-such-user'/)
      return true
    })
  })

  test('StreamInput delivers stdin in order after its start message', T, async () => {
    const sbx = await sandbox()
    const handle = await sbx.commands.run('cat', { background: true, stdin: true })
    const body = Buffer.concat([
      envelope({ start: { process: { pid: handle.pid } } }),
      envelope({ data: { input: { stdin: Buffer.from('one ').toString('base64') } } }),
      envelope({ keepalive: {} }),
      envelope({ data: { input: { stdin: Buffer.from('two').toString('base64') } } }),
    ])
    const res = await fetch(`${AGENT_URL}/process.Process/StreamInput`, {
      method: 'POST',
      headers: { 'content-type': 'application/connect+json' },
      body,
    })
    assert.equal(res.status, 200)
    const got = frames(Buffer.from(await res.arrayBuffer()))
    assert.deepEqual(got, [{ flags: 0, json: {} }, { flags: 2, json: {} }])
    await sbx.commands.closeStdin(handle.pid)
    const result = await handle.wait()
    assert.equal(result.stdout, 'one two')
  })

  test('GET /envs and /metrics report what the orchestrator reads', T, async () => {
    const envs = await (await fetch(`${AGENT_URL}/envs`)).json()
    assert.equal(envs.E2B_SANDBOX, 'true')
    assert.equal(envs.COVE_E2E_GLOBAL, 'from-init')
    const res = await fetch(`${AGENT_URL}/metrics`)
    assert.equal(res.status, 200)
    const m = await res.json()
    for (const key of ['ts', 'cpu_count', 'cpu_used_pct', 'mem_total_mib', 'mem_used_mib', 'mem_total', 'mem_used', 'mem_cache', 'disk_used', 'disk_total']) {
      assert.equal(typeof m[key], 'number', `${key} in ${JSON.stringify(m)}`)
    }
    assert.ok(m.mem_total > m.mem_used && m.mem_used > 0)
    assert.ok(m.disk_total >= m.disk_used && m.disk_used > 0)
    assert.ok(Math.abs(m.ts - Date.now() / 1000) < 60)
  })
})
