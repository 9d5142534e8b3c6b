// WebSockets through the TLS edge: wss://<port>-<id>.<domain> (and sandbox.<domain> with the
// E2b-Sandbox-* headers) to a stdlib-only echo server (ws_echo.py) bound to 127.0.0.1 inside the
// sandbox. The upgrade is HTTP/1.1 in both of run.sh's phases; the phase only changes what else
// the shim offers.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'

import { Sandbox } from 'e2b'
import { phaseLabel, portHost, sharedHost, wsConnect } from './edge_client.mjs'
import { RUN_ID, T, killTracked, newSandbox } from './helpers.mjs'
import { startEchoServer } from './sandbox_servers.mjs'

after(killTracked)

const P = phaseLabel()
const PORT = 8765

describe(`${P} WebSocket echo through wss://`, () => {
  let sbx
  let host

  before(async () => {
    sbx = await newSandbox({ metadata: { run: RUN_ID, file: 'tls_websocket' }, timeoutMs: 600_000 })
    await startEchoServer(sbx, PORT, { bind: '127.0.0.1' })
    host = portHost(sbx.sandboxId, PORT)
  })

  test('text, large binary, ping and close round trips', T, async () => {
    const ws = await wsConnect(host, '/ws')
    try {
      ws.send('hello through the edge ✓')
      let m = await ws.next()
      assert.equal(m.opcode, 1)
      assert.equal(m.data.toString('utf8'), 'hello through the edge ✓')

      const big = randomBytes(300 * 1024)
      ws.send(big)
      m = await ws.next()
      assert.equal(m.opcode, 2)
      assert.ok(m.data.equals(big), `binary echo of ${big.length} bytes came back as ${m.data.length} different bytes`)

      for (let i = 0; i < 20; i++) ws.send(`msg ${i}`)
      for (let i = 0; i < 20; i++) assert.equal((await ws.next()).data.toString(), `msg ${i}`, 'order of messages')

      ws.ping(Buffer.from('are you there'))
      m = await ws.next()
      assert.equal(m.opcode, 0xa, 'pong')
      assert.equal(m.data.toString(), 'are you there')

      m = await ws.close()
      assert.equal(m.opcode, 8, 'close frame')
      assert.equal(m.data.readUInt16BE(0), 1000)
    } finally {
      ws.destroy()
    }
  })

  test('two WebSockets at once stay apart; sandbox.<domain> with headers routes an upgrade too', T, async () => {
    const a = await wsConnect(host, '/ws')
    const b = await wsConnect(sharedHost(), '/ws', {
      headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': String(PORT) },
    })
    try {
      a.send('to a')
      b.send('to b')
      assert.equal((await b.next()).data.toString(), 'to b')
      assert.equal((await a.next()).data.toString(), 'to a')
    } finally {
      a.destroy()
      b.destroy()
    }
  })

  test('killing the sandbox ends an open WebSocket', T, async () => {
    const ws = await wsConnect(host, '/ws')
    try {
      ws.send('before kill')
      assert.equal((await ws.next()).data.toString(), 'before kill')
      assert.equal(await Sandbox.kill(sbx.sandboxId), true)
      const outcome = await ws.next(10_000).then(
        (m) => `a message: opcode ${m.opcode} ${JSON.stringify(m.data.toString())}`,
        (e) => e.message,
      )
      assert.match(outcome, /WebSocket ended/, 'the WebSocket outlived its sandbox')
    } finally {
      ws.destroy()
    }
  })
})
