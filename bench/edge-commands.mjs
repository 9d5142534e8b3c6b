// commands.run('true') through the unchanged npm SDK, wherever its environment points it: the TLS
// edge (E2B_DOMAIN + NODE_EXTRA_CA_CERTS), the plain-HTTP listeners (E2B_API_URL/E2B_SANDBOX_URL)
// or an agent on localhost:49983 (E2B_DEBUG=true). One sandbox, WARMUP untimed runs, then RUNS
// sequential timed ones. Prints one JSON line.
// With COVE_PAIR_API_URL and COVE_PAIR_SANDBOX_URL set, the same sandbox is also reached through
// those (plain-HTTP) URLs and the two paths alternate run by run, so drift on a busy host hits both
// alike; the line then adds the pair's p50 and the median of the per-run differences.
// Usage: node bench/edge-commands.mjs RUNS [WARMUP]
import { Sandbox } from '../tests/e2e/node_modules/e2b/dist/index.mjs'

const runs = Number(process.argv[2] ?? 200)
const warmup = Number(process.argv[3] ?? 20)
if (!(runs > 0 && warmup >= 0)) throw new Error('usage: edge-commands.mjs RUNS [WARMUP]')

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.round(p * (s.length - 1)))]
}

const timed = async (sandbox) => {
  const t0 = performance.now()
  const r = await sandbox.commands.run('true')
  if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}`)
  return performance.now() - t0
}

const sbx = await Sandbox.create({ timeoutMs: 600_000 })
try {
  const pairApi = process.env.COVE_PAIR_API_URL
  const pairSandbox = process.env.COVE_PAIR_SANDBOX_URL
  const pair = pairApi && pairSandbox
    ? await Sandbox.connect(sbx.sandboxId, { apiUrl: pairApi, sandboxUrl: pairSandbox })
    : null
  for (let i = 0; i < warmup; i++) {
    await sbx.commands.run('true')
    if (pair) await pair.commands.run('true')
  }
  const samples = []
  const pairSamples = []
  const differences = []
  for (let i = 0; i < runs; i++) {
    const t = await timed(sbx)
    samples.push(t)
    if (pair) {
      const u = await timed(pair)
      pairSamples.push(u)
      differences.push(t - u)
    }
  }
  const out = {
    runs,
    p50_ms: +pct(samples, 0.5).toFixed(3),
    p99_ms: +pct(samples, 0.99).toFixed(3),
    mean_ms: +(samples.reduce((a, b) => a + b, 0) / samples.length).toFixed(3),
  }
  if (pair) {
    out.pair_p50_ms = +pct(pairSamples, 0.5).toFixed(3)
    out.paired_difference_p50_ms = +pct(differences, 0.5).toFixed(3)
  }
  console.log(JSON.stringify(out))
} finally {
  await sbx.kill() // a no-op in debug mode
}
