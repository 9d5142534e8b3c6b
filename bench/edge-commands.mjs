// commands.run('true') through the unchanged npm SDK, wherever its environment points it: the TLS
// edge (E2B_DOMAIN + NODE_EXTRA_CA_CERTS), the plain-HTTP listeners (E2B_API_URL/E2B_SANDBOX_URL)
// or an agent on localhost:49983 (E2B_DEBUG=true). One sandbox, WARMUP untimed runs, then RUNS
// sequential timed ones. Prints one JSON line.
// Usage: node bench/edge-commands.mjs RUNS [WARMUP]
import { Sandbox } from '../tests/e2e/node_modules/e2b/dist/index.mjs'

const runs = Number(process.argv[2] ?? 200)
const warmup = Number(process.argv[3] ?? 20)
if (!(runs > 0 && warmup >= 0)) throw new Error('usage: edge-commands.mjs RUNS [WARMUP]')

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.round(p * (s.length - 1)))]
}

const sbx = await Sandbox.create({ timeoutMs: 600_000 })
try {
  for (let i = 0; i < warmup; i++) await sbx.commands.run('true')
  const samples = []
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    const r = await sbx.commands.run('true')
    samples.push(performance.now() - t0)
    if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}`)
  }
  console.log(JSON.stringify({
    runs,
    p50_ms: +pct(samples, 0.5).toFixed(3),
    p99_ms: +pct(samples, 0.99).toFixed(3),
    mean_ms: +(samples.reduce((a, b) => a + b, 0) / samples.length).toFixed(3),
  }))
} finally {
  await sbx.kill() // a no-op in debug mode
}
