// Idle streams held by the shim: one sandbox runs `sleep` in the background, then STREAMS
// `commands.connect(pid)` server streams are opened to it through the unchanged npm SDK (wherever
// its environment points: the TLS edge or the plain-HTTP listeners) and left open and quiet (the
// agent's keepalive comes every 50 s). A connect is a real Connect stream through the proxy and the
// agent's host channel but costs no process or inotify instance inside the sandbox (one inotify
// instance per watchDir would hit fs.inotify.max_user_instances = 128 long before 1000).
// Reports the shim's VmRSS before, with the streams open, and after they are closed, and the TCP
// connections the client held to PORT. Prints one JSON line.
// The SDK (undici 7) never multiplexes: it treats a POST as non-idempotent and sends none beside
// another on the same connection, so each open RPC holds its own connection, h2 or not, and
// E2B_ENVD_RPC_CONNECTIONS (default 200) caps open streams per sandbox. With EDGE_STREAMS_H2=1 the
// streams are opened instead with node:http2 on ONE TLS connection to the edge (the same Connect
// request the SDK sends: POST /process.Process/Connect, connect+json, X-Access-Token,
// Keepalive-Ping-Interval: 50), each counted open once its first event arrived: what 1000 streams
// multiplexed on one h2 connection cost the edge. NODE_EXTRA_CA_CERTS is the edge's CA.
// Usage: node bench/edge-streams.mjs STREAMS SHIM_PID PORT
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import http2 from 'node:http2'
import { Sandbox } from '../tests/e2e/node_modules/e2b/dist/index.mjs'

const streams = Number(process.argv[2] ?? 1000)
const shimPid = Number(process.argv[3])
const port = Number(process.argv[4])
if (!(streams > 0 && shimPid > 0 && port > 0)) throw new Error('usage: edge-streams.mjs STREAMS SHIM_PID PORT')
const batch = 50
const settleMs = 3000

const rssKiB = () => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${shimPid}/status`, 'utf8'))[1])
const fds = () => execFileSync('ls', [`/proc/${shimPid}/fd`], { encoding: 'utf8' }).split('\n').filter(Boolean).length
// Established client-side TCP connections to the listener (local end: the client's ephemeral port).
const connections = () =>
  execFileSync('ss', ['-Htn', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' })
    .split('\n').filter(Boolean).length
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// One multiplexed h2 connection to the sandbox's envd host on the edge; open(pid) resolves with a
// handle once the stream's first bytes (the start event) arrived.
function rawH2(sbx) {
  const session = http2.connect(`https://49983-${sbx.sandboxId}.${process.env.E2B_DOMAIN}`, {
    ca: readFileSync(process.env.NODE_EXTRA_CA_CERTS),
  })
  session.on('error', () => {})
  const open = (pid) => new Promise((resolve, reject) => {
    const body = Buffer.from(JSON.stringify({ process: { pid } }))
    const head = Buffer.alloc(5)
    head.writeUInt32BE(body.length, 1)
    const stream = session.request({
      ':method': 'POST', ':path': '/process.Process/Connect',
      'content-type': 'application/connect+json', 'connect-protocol-version': '1',
      'keepalive-ping-interval': '50', ...(sbx.envdAccessToken ? { 'x-access-token': sbx.envdAccessToken } : {}),
    })
    const timer = setTimeout(() => { stream.close(); reject(new Error('no start event within 60 s')) }, 60_000)
    stream.on('response', (h) => { if (h[':status'] !== 200) { clearTimeout(timer); reject(new Error(`status ${h[':status']}`)) } })
    stream.once('data', () => {
      clearTimeout(timer)
      const handle = { result: undefined, iterationError: undefined, disconnect: async () => stream.close(http2.constants.NGHTTP2_CANCEL) }
      stream.on('end', () => (handle.result ??= 'ended'))
      stream.on('close', () => (handle.result ??= 'closed'))
      stream.on('error', (e) => (handle.iterationError ??= e))
      stream.on('data', () => {})
      resolve(handle)
    })
    stream.on('error', (e) => { clearTimeout(timer); reject(e) })
    stream.end(Buffer.concat([head, body]))
  })
  return { open, close: () => session.close() }
}

const sbx = await Sandbox.create({ timeoutMs: 900_000 })
try {
  const bg = await sbx.commands.run('sleep 900', { background: true, timeoutMs: 0 })
  const raw = process.env.EDGE_STREAMS_H2 === '1' ? rawH2(sbx) : null
  const connect = () => (raw ? raw.open(bg.pid) : sbx.commands.connect(bg.pid, { timeoutMs: 0 }))
  // Warm-up: the connection(s) and the shim's buffers of a first few streams.
  for (const h of await Promise.all(Array.from({ length: 10 }, () => connect()))) {
    await h.disconnect()
  }
  await sleep(settleMs)
  const before = { rss: rssKiB(), fds: fds(), connections: connections() }

  // A stream that does not open is a finding, not a crash: stop there and report how far it got.
  const handles = []
  let failure = null
  const t0 = performance.now()
  for (let i = 0; i < streams && !failure; i += batch) {
    const n = Math.min(batch, streams - i)
    const got = await Promise.allSettled(Array.from({ length: n }, () => connect()))
    for (const r of got) {
      if (r.status === 'fulfilled') handles.push(r.value)
      else failure ??= `${r.reason?.name}: ${String(r.reason?.message).slice(0, 300)}`
    }
  }
  const openS = (performance.now() - t0) / 1000
  await sleep(settleMs)
  const open = { rss: rssKiB(), fds: fds(), connections: connections() }
  // Every stream must still be open: none may have ended or failed while idle.
  const ended = handles.filter((h) => h.result !== undefined || h.iterationError !== undefined).length
  if (ended && !failure) failure = `${ended} of ${handles.length} idle streams ended while they should have stayed open`

  for (const h of handles) await h.disconnect()
  await sleep(settleMs)
  const closed = { rss: rssKiB(), fds: fds() }
  raw?.close()
  await bg.kill()

  console.log(JSON.stringify({
    streams,
    client: raw ? 'node:http2, one connection' : 'npm e2b',
    opened: handles.length,
    failure,
    open_s: +openS.toFixed(2),
    rss_before_kib: before.rss,
    rss_open_kib: open.rss,
    rss_closed_kib: closed.rss,
    kib_per_stream: +((open.rss - before.rss) / Math.max(1, handles.length)).toFixed(2),
    fds_before: before.fds,
    fds_open: open.fds,
    fds_closed: closed.fds,
    connections_before: before.connections,
    connections_open: open.connections,
  }))
} finally {
  await sbx.kill()
}
