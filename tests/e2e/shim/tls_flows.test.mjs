// The user flows of flows.test.mjs (commands, files, PTY, watches) through the TLS edge, with
// only E2B_DOMAIN, E2B_API_KEY and NODE_EXTRA_CA_CERTS set: the SDK finds
// https://api.<domain> and https://49983-<id>.<domain> by itself. run.sh runs this file with
// the shim offering h2 and again with http2 = false.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import diagnostics from 'node:diagnostics_channel'
import { after, describe, test } from 'node:test'

import { Sandbox } from 'e2b'
import { domain, expectedAlpn, phaseLabel, splitHost } from './edge_client.mjs'
import { RUN_ID, T, TLS_CLIENT, killTracked, newSandbox, sh } from './helpers.mjs'
import { describeUserFlows } from './user_flows.mjs'

after(killTracked)

const P = phaseLabel()
const metadata = { run: RUN_ID, file: 'tls_flows' }

// Every connection the SDK's undici opens (the channel is undici's public diagnostics API; this
// file makes no other HTTP connections): which host, and what ALPN gave it.
const sdkConnections = []
diagnostics.subscribe('undici:client:connected', ({ connectParams, socket }) => {
  sdkConnections.push({
    hostname: connectParams.hostname,
    port: String(connectParams.port),
    version: connectParams.version,
    alpn: socket.alpnProtocol,
  })
})

let sandboxPromise
function sandbox() {
  sandboxPromise ??= newSandbox({ metadata, timeoutMs: 600_000 })
  return sandboxPromise
}

describe(`${P} the SDK with only E2B_DOMAIN`, () => {
  test('create, getInfo and list go to api.<domain>; envd to https://49983-<id>.<domain>', T, async () => {
    assert.ok(TLS_CLIENT, 'E2B_DOMAIN is not set: run this file through run.sh')
    const sbx = await sandbox() // newSandbox checks sandboxDomain and the envd URL
    assert.equal(sbx.getHost(49983), `49983-${sbx.sandboxId}.${domain()}`)
    const info = await sbx.getInfo()
    assert.equal(info.sandboxId, sbx.sandboxId)
    assert.deepEqual(info.metadata, metadata)
    const listed = await Sandbox.list({ query: { metadata } }).nextItems()
    assert.deepEqual(listed.map((s) => s.sandboxId), [sbx.sandboxId])
    assert.equal(await sbx.isRunning(), true)
  })

  test('an 8 MiB file goes up and comes back intact', T, async () => {
    const sbx = await sandbox()
    const data = randomBytes(8 * 1024 * 1024)
    const digest = createHash('sha256').update(data).digest('hex')
    await sbx.files.write('/home/user/tls-big.bin', data)
    assert.equal((await sh(sbx, 'sha256sum /home/user/tls-big.bin')).split(' ')[0], digest, 'sha256 inside')
    const back = await sbx.files.read('/home/user/tls-big.bin', { format: 'bytes' })
    assert.equal(back.length, data.length)
    assert.equal(createHash('sha256').update(back).digest('hex'), digest, 'sha256 of the download')
  })

  test('30 commands at once (multiplexed on h2, pooled on http/1.1) each get their own output', T, async () => {
    const sbx = await sandbox()
    const runs = Array.from({ length: 30 }, (_, i) => sbx.commands.run(`sleep 0.$((RANDOM % 5)); echo run-${i}`))
    const results = await Promise.all(runs)
    results.forEach((r, i) => assert.equal(r.stdout, `run-${i}\n`))
  })

  test('a long command output streams through (1e6 lines)', T, async () => {
    const sbx = await sandbox()
    const r = await sbx.commands.run('seq 1 1000000', { timeoutMs: 60_000 })
    assert.equal(r.exitCode, 0)
    assert.ok(r.stdout.startsWith('1\n2\n3\n'))
    assert.ok(r.stdout.endsWith('999999\n1000000\n'))
    assert.equal(r.stdout.split('\n').length, 1_000_001)
  })
})

describeUserFlows(sandbox, P)

describe(`${P} the SDK's own connections`, () => {
  test('every connection to api.<domain> and 49983-<id>.<domain> negotiated the expected ALPN', T, async () => {
    const sbx = await sandbox()
    const { name, port } = splitHost(domain())
    const show = JSON.stringify(sdkConnections)
    const api = sdkConnections.filter((c) => c.hostname === `api.${name}`)
    const envd = sdkConnections.filter((c) => c.hostname === `49983-${sbx.sandboxId}.${name}`)
    assert.ok(api.length > 0, `no SDK connection to api.${name}: ${show}`)
    assert.ok(envd.length > 0, `no SDK connection to the envd host: ${show}`)
    for (const c of [...api, ...envd]) {
      assert.equal(c.port, String(port), `port of ${c.hostname}: ${show}`)
      assert.equal(c.alpn, expectedAlpn(), `ALPN of the SDK's connection to ${c.hostname}: ${show}`)
      assert.equal(c.version, expectedAlpn() === 'h2' ? 'h2' : 'h1', `undici's protocol for ${c.hostname}: ${show}`)
    }
  })
})
