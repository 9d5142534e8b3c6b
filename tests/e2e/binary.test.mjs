// The Connect protocol with the binary (protobuf) codec, through @connectrpc/connect-node and service
// descriptors loaded at run time from COVE_DESCRIPTORS (the e2b SDK itself only speaks JSON).
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { Code, ConnectError, createClient } from '@connectrpc/connect'
import { createConnectTransport } from '@connectrpc/connect-node'
import { AGENT_URL, TEST_TIMEOUT, lazy, loadDescriptors, pollUntil } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }

/** Non-keepalive events of a process stream, as {case, value}. */
async function collect(iter, events = []) {
  for (;;) {
    const { value, done } = await iter.next()
    if (done) return events
    const ev = value.event?.event
    if (ev?.case !== 'keepalive') events.push(ev)
  }
}

async function nextEvent(iter) {
  for (;;) {
    const { value, done } = await iter.next()
    assert.ok(!done, 'stream ended early')
    const ev = value.event?.event
    if (ev?.case !== 'keepalive') return ev
  }
}

const bySelector = (pid) => ({ process: { selector: { case: 'pid', value: pid } } })

/** process.Process client over Connect + binary codec; records "<Method> <response content-type>". */
const setup = lazy(async () => {
  const { registry, processService } = loadDescriptors()
  const signal = registry.getEnum('process.Signal')
  assert.ok(signal, 'process.Signal missing from the descriptor set')
  const sigkill = signal.values.find((v) => v.name === 'SIGNAL_SIGKILL')?.number
  assert.equal(sigkill, 9)

  const contentTypes = []
  const transport = createConnectTransport({
    baseUrl: AGENT_URL,
    httpVersion: '1.1',
    useBinaryFormat: true,
    interceptors: [
      (next) => async (req) => {
        const res = await next(req)
        contentTypes.push(`${req.method.name} ${res.header.get('content-type')}`)
        return res
      },
    ],
  })
  return { client: createClient(processService, transport), sigkill, contentTypes }
})

describe('Connect binary codec (process.Process)', () => {
  test('Start streams start, stdout bytes and end', T, async () => {
    const { client, contentTypes } = await setup()
    const stream = client.start(
      { process: { cmd: '/bin/echo', args: ['hello', 'binary wörld', '$HOME'] }, stdin: false },
      { timeoutMs: 20_000 },
    )
    const events = await collect(stream[Symbol.asyncIterator]())
    assert.ok(events.length >= 3, `events: ${events.map((e) => e?.case)}`)

    const [first, ...rest] = events
    assert.equal(first.case, 'start')
    assert.ok(first.value.pid > 0)

    const end = rest.pop()
    assert.equal(end.case, 'end', `last event: ${end?.case}`)
    assert.equal(end.value.exitCode, 0)
    assert.equal(end.value.exited, true)
    assert.equal(end.value.status, 'exit status 0')

    const chunks = []
    for (const ev of rest) {
      assert.equal(ev.case, 'data')
      assert.equal(ev.value.output.case, 'stdout', `unexpected ${ev.value.output.case} output`)
      assert.ok(ev.value.output.value instanceof Uint8Array)
      chunks.push(ev.value.output.value)
    }
    assert.equal(Buffer.concat(chunks).toString('utf8'), 'hello binary wörld $HOME\n')
    assert.ok(contentTypes.includes('Start application/connect+proto'), `content types: ${contentTypes}`)
  })

  test('Connect to a running process, SendSignal SIGKILL ends it with exit code -1', T, async () => {
    const { client, sigkill, contentTypes } = await setup()
    const ac = new AbortController()
    const started = client
      .start({ process: { cmd: '/bin/sleep', args: ['5'] } }, { timeoutMs: 20_000, signal: ac.signal })
      [Symbol.asyncIterator]()
    try {
      const first = await nextEvent(started)
      assert.equal(first.case, 'start')
      const pid = first.value.pid

      const conn = client.connect(bySelector(pid), { timeoutMs: 20_000 })[Symbol.asyncIterator]()
      const connStart = await nextEvent(conn)
      assert.equal(connStart.case, 'start')
      assert.equal(connStart.value.pid, pid)

      await client.sendSignal({ ...bySelector(pid), signal: sigkill })

      for (const [name, iter] of [['Connect', conn], ['Start', started]]) {
        const events = await collect(iter)
        const end = events.at(-1)
        assert.equal(end?.case, 'end', `${name} stream: ${events.map((e) => e?.case)}`)
        assert.equal(end.value.exitCode, -1, `${name} exit code`)
        assert.equal(end.value.exited, false)
        assert.equal(end.value.status, 'signal: killed')
        assert.equal(end.value.error, 'signal: killed')
        assert.ok(events.slice(0, -1).every((e) => e.case === 'data'), `${name}: ${events.map((e) => e?.case)}`)
      }
      assert.ok(contentTypes.includes('Connect application/connect+proto'), `content types: ${contentTypes}`)
      assert.ok(contentTypes.includes('SendSignal application/proto'), `content types: ${contentTypes}`)

      // Unknown pids are reported as not_found (a unary error, JSON-encoded even with the binary codec).
      await assert.rejects(
        client.sendSignal({ ...bySelector(999999), signal: sigkill }),
        (e) => e instanceof ConnectError && e.code === Code.NotFound,
      )
    } finally {
      ac.abort()
    }
  })

  test('List contains a running process with its config', T, async () => {
    const { client, sigkill, contentTypes } = await setup()
    const ac = new AbortController()
    const started = client
      .start(
        { process: { cmd: '/bin/sleep', args: ['6'], envs: { COVE_E2E_LIST: 'binary' }, cwd: '/tmp' }, stdin: false },
        { timeoutMs: 20_000, signal: ac.signal },
      )
      [Symbol.asyncIterator]()
    try {
      const first = await nextEvent(started)
      assert.equal(first.case, 'start')
      const pid = first.value.pid

      const { processes } = await client.list({})
      const info = processes.find((p) => p.pid === pid)
      assert.ok(info, `pid ${pid} not in List: ${processes.map((p) => p.pid)}`)
      assert.equal(info.config.cmd, '/bin/sleep')
      assert.deepEqual(info.config.args, ['6'])
      assert.deepEqual({ ...info.config.envs }, { COVE_E2E_LIST: 'binary' })
      assert.equal(info.config.cwd, '/tmp')
      assert.ok(contentTypes.includes('List application/proto'), `content types: ${contentTypes}`)

      await client.sendSignal({ ...bySelector(pid), signal: sigkill })
      const events = await collect(started)
      assert.equal(events.at(-1)?.case, 'end')
      await pollUntil(
        () => client.list({}),
        (res) => !res.processes.some((p) => p.pid === pid),
        { what: `killed pid ${pid} gone from List` },
      )
    } finally {
      ac.abort()
    }
  })
})
