// commands.run('true') through the unchanged npm SDK in debug mode (agent on localhost:49983),
// then the agent's RSS idle and with 100 live processes. Prints JSON.
import { readFileSync } from 'node:fs'
import { Sandbox } from '../tests/e2e/node_modules/e2b/dist/index.mjs'

const runs = Number(process.argv[2] ?? 500)
const agentPid = Number(process.argv[3])

const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${agentPid}/status`, 'utf8'))[1])
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.round(p * (s.length - 1)))]
}

const sbx = await Sandbox.create()
for (let i = 0; i < 20; i++) await sbx.commands.run('true') // warm-up
const samples = []
for (let i = 0; i < runs; i++) {
  const t0 = performance.now()
  await sbx.commands.run('true')
  samples.push(performance.now() - t0)
}
// The same through the agent without the SDK or bash: Start of /bin/true over Connect JSON.
const frame = (obj) => {
  const payload = Buffer.from(JSON.stringify(obj))
  const head = Buffer.alloc(5)
  head.writeUInt32BE(payload.length, 1)
  return Buffer.concat([head, payload])
}
const rawBody = frame({ process: { cmd: '/bin/true' }, stdin: false })
const rawSamples = []
for (let i = 0; i < runs + 20; i++) {
  const t0 = performance.now()
  const res = await fetch('http://127.0.0.1:49983/process.Process/Start', {
    method: 'POST',
    headers: { 'content-type': 'application/connect+json', 'connect-protocol-version': '1' },
    body: rawBody,
  })
  const text = Buffer.from(await res.arrayBuffer()).toString('latin1')
  if (!text.includes('"exited":true')) throw new Error(`unexpected Start response: ${text}`)
  if (i >= 20) rawSamples.push(performance.now() - t0)
}
// POST /init (the orchestrator's call, budget 50 ms) beside GET /health on the same agent.
const timeFetch = async (n, url, init) => {
  const xs = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    const res = await fetch(url, init?.(i))
    await res.arrayBuffer()
    if (res.status !== 204) throw new Error(`${url}: ${res.status}`)
    xs.push(performance.now() - t0)
  }
  return xs
}
const initSamples = await timeFetch(200, 'http://127.0.0.1:49983/init', () => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ envVars: {}, defaultUser: 'user', timestamp: new Date().toISOString() }),
}))
const healthSamples = await timeFetch(200, 'http://127.0.0.1:49983/health')
const idleRss = rssKiB()
const handles = []
for (let i = 0; i < 100; i++) handles.push(await sbx.commands.run('sleep 120', { background: true }))
await new Promise((r) => setTimeout(r, 500))
const busyRss = rssKiB()
await Promise.all(handles.map((h) => h.kill()))
console.log(JSON.stringify({
  runs,
  p50_ms: +pct(samples, 0.5).toFixed(3),
  p99_ms: +pct(samples, 0.99).toFixed(3),
  init_p50_ms: +pct(initSamples, 0.5).toFixed(3),
  health_p50_ms: +pct(healthSamples, 0.5).toFixed(3),
  raw_start_p50_ms: +pct(rawSamples, 0.5).toFixed(3),
  raw_start_p99_ms: +pct(rawSamples, 0.99).toFixed(3),
  agent_rss_idle_kib: idleRss,
  agent_rss_100_processes_kib: busyRss,
}))
