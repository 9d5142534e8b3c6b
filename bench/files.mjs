// files.write / files.read through the unchanged npm SDK in debug mode (agent on localhost:49983):
// p50 of 4 MiB writes, 4 MiB reads and 4 KiB writes, then one large streamed upload with its
// throughput and the agent's peak RSS (VmRSS sampled every 10 ms). Prints JSON.
// Usage: node bench/files.mjs RUNS AGENT_HOST_PID [LARGE_MIB]
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Sandbox } from '../tests/e2e/node_modules/e2b/dist/index.mjs'

const runs = Number(process.argv[2] ?? 50)
const agentPid = Number(process.argv[3])
const largeMiB = Number(process.argv[4] ?? 1024)
const MiB = 1024 * 1024
const dir = '/home/user/.cove-bench-files'

const status = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${agentPid}/status`, 'utf8'))[1])
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

async function time(fn) {
  const samples = []
  for (let i = 0; i < runs + 5; i++) {
    const t0 = performance.now()
    await fn(i)
    if (i >= 5) samples.push(performance.now() - t0)
  }
  return +p50(samples).toFixed(3)
}

const sbx = await Sandbox.create()
await sbx.commands.run(`rm -rf ${dir} && mkdir -p ${dir}`)
const big = randomBytes(4 * MiB)
const small = randomBytes(4 * 1024)

const write4m = await time(() => sbx.files.write(`${dir}/w4m.bin`, big))
const read4m = await time(async () => {
  const got = await sbx.files.read(`${dir}/w4m.bin`, { format: 'bytes' })
  if (got.length !== big.length) throw new Error(`read ${got.length} bytes`)
})
// The SDK's fetch always offers gzip, so an envd-compatible agent compresses every read; the same
// read asking for identity shows what that costs.
const read4mIdentity = await time(async () => {
  const res = await fetch(`http://127.0.0.1:49983/files?path=${encodeURIComponent(`${dir}/w4m.bin`)}`, {
    headers: { 'accept-encoding': 'identity' },
  })
  const got = await res.arrayBuffer()
  if (res.status !== 200 || got.byteLength !== big.length) throw new Error(`read ${res.status} ${got.byteLength}`)
})
const write4k = await time(() => sbx.files.write(`${dir}/w4k.bin`, small))

// One large upload as a stream (octet-stream body, never whole in memory on either side).
const block = randomBytes(MiB)
let sent = 0
const body = new ReadableStream({
  pull(c) {
    if (sent === largeMiB) return c.close()
    const chunk = Buffer.from(block)
    chunk.writeUInt32BE(sent++, 0)
    c.enqueue(chunk)
  },
})
const rssBefore = status('VmRSS')
let rssPeak = rssBefore
const timer = setInterval(() => (rssPeak = Math.max(rssPeak, status('VmRSS'))), 10)
const t0 = performance.now()
await sbx.files.write(`${dir}/large.bin`, body)
const seconds = (performance.now() - t0) / 1000
clearInterval(timer)
rssPeak = Math.max(rssPeak, status('VmRSS'))
const size = Number((await sbx.commands.run(`stat -c %s ${dir}/large.bin`)).stdout)
if (size !== largeMiB * MiB) throw new Error(`large upload stored ${size} bytes`)
await sbx.commands.run(`rm -rf ${dir}`)

console.log(JSON.stringify({
  runs,
  write_4m_p50_ms: write4m,
  read_4m_p50_ms: read4m,
  read_4m_identity_p50_ms: read4mIdentity,
  write_4k_p50_ms: write4k,
  large_mib: largeMiB,
  large_upload_s: +seconds.toFixed(3),
  large_upload_mib_s: +(largeMiB / seconds).toFixed(1),
  agent_rss_before_kib: rssBefore,
  agent_rss_peak_kib: rssPeak,
  agent_hwm_kib: status('VmHWM'),
}))
