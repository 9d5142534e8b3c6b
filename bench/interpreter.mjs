// Code-interpreter measurements through the unchanged npm @e2b/code-interpreter, for
// bench/interpreter.sh, wherever the environment points the SDK (the TLS edge: E2B_DOMAIN +
// NODE_EXTRA_CA_CERTS; or plain HTTP: E2B_API_URL + E2B_SANDBOX_URL). Prints one JSON object (ms).
//   1. warm: one sandbox; WARMUP untimed runCode('1+1') on the default python context, then RUNS
//      timed ones alternating with a raw GET /health on :49999 over the same route (the HTTP round
//      trip floor); then bench/interpreter-kernel.py inside the sandbox (commands.run as root):
//      the raw jupyter_client round trip of `1+1` on a python3 kernel of its own, kernel start
//      and `node -e 0` start times.
//   2. create: CREATES times Sandbox.create() (code-interpreter-v1) then its first runCode('1+1'),
//      each alternating with Sandbox.create(BASE_TEMPLATE) (a sandbox without the interpreter).
//   3. kernel start: STARTS times createCodeContext() for python and for javascript (each removed
//      again, untimed).
// Usage: node bench/interpreter.mjs RUNS WARMUP CREATES STARTS
// Env:   BASE_TEMPLATE (default base): the baseline template of figure 2 ('' to skip it)
import { readFileSync } from 'node:fs'

import { Sandbox } from '../tests/e2e/node_modules/@e2b/code-interpreter/dist/index.mjs'

const PORT = 49999
const [runs, warmup, creates, starts] = process.argv.slice(2).map(Number)
if (![runs, creates, starts].every((n) => Number.isInteger(n) && n > 0) || !(Number.isInteger(warmup) && warmup >= 0)) {
  console.error('usage: node bench/interpreter.mjs RUNS WARMUP CREATES STARTS')
  process.exit(2)
}
const baseTemplate = process.env.BASE_TEMPLATE ?? 'base'

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.round(p * (s.length - 1)))]
}
const r3 = (x) => Math.round(x * 1000) / 1000
const summary = (xs) => ({ p50: r3(median(xs)), p99: r3(pct(xs, 0.99)), all: xs.map(r3) })

async function timed(fn) {
  const t0 = performance.now()
  const value = await fn()
  return { ms: performance.now() - t0, value }
}

// Every sandbox made here, killed at the end and on SIGINT/SIGTERM.
const live = new Set()
async function create(template) {
  const sbx = template ? await Sandbox.create(template, { timeoutMs: 900_000 }) : await Sandbox.create({ timeoutMs: 900_000 })
  live.add(sbx)
  return sbx
}
async function kill(sbx) {
  live.delete(sbx)
  await sbx.kill()
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => {
    await Promise.all([...live].map((s) => s.kill().catch(() => {})))
    process.exit(sig === 'SIGINT' ? 130 : 143)
  })
}

async function runOnePlusOne(sbx, opts) {
  const e = await sbx.runCode('1+1', opts)
  if (e.error || e.text !== '2') throw new Error(`runCode('1+1') gave ${JSON.stringify(e.toJSON())}`)
}

// GET /health on :49999 through the route the SDK uses (same fetch, same connection pool).
async function health(sbx) {
  const base = process.env.E2B_SANDBOX_URL
  const url = base ? `${base.replace(/\/+$/, '')}/health` : `https://${sbx.getHost(PORT)}/health`
  const headers = base ? { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': String(PORT) } : {}
  const res = await fetch(url, { headers, keepalive: true })
  const body = await res.text()
  if (res.status !== 200) throw new Error(`GET /health: ${res.status} ${body}`)
}

async function warm() {
  const sbx = await create()
  try {
    for (let i = 0; i < warmup; i++) {
      await runOnePlusOne(sbx)
      await health(sbx)
    }
    const run = [], http = []
    for (let i = 0; i < runs; i++) {
      run.push((await timed(() => runOnePlusOne(sbx))).ms)
      http.push((await timed(() => health(sbx))).ms)
    }
    const script = readFileSync(new URL('./interpreter-kernel.py', import.meta.url), 'utf8')
    await sbx.files.write('/tmp/cove-bench-kernel.py', script, { user: 'root' })
    const r = await sbx.commands.run(`/usr/bin/python3 /tmp/cove-bench-kernel.py ${runs} ${Math.max(warmup, 1)} ${starts}`, {
      user: 'root',
      cwd: '/home/user',
      timeoutMs: 600_000,
    })
    const kernel = JSON.parse(r.stdout.trim().split('\n').at(-1))
    return { runCode: summary(run), health: summary(http), kernel }
  } finally {
    await kill(sbx)
  }
}

async function createAndFirstCall() {
  const createMs = [], firstMs = [], baseMs = []
  for (let i = 0; i < creates; i++) {
    const c = await timed(() => create())
    createMs.push(c.ms)
    try {
      firstMs.push((await timed(() => runOnePlusOne(c.value))).ms)
    } finally {
      await kill(c.value)
    }
    if (baseTemplate) {
      const b = await timed(() => create(baseTemplate))
      baseMs.push(b.ms)
      await kill(b.value)
    }
  }
  return { create: summary(createMs), first_run: summary(firstMs), base_create: baseMs.length ? summary(baseMs) : null }
}

async function kernelStarts() {
  const sbx = await create()
  try {
    const out = {}
    for (const language of ['python', 'javascript']) {
      const ms = []
      for (let i = 0; i < starts; i++) {
        const { ms: t, value: ctx } = await timed(() => sbx.createCodeContext({ language }))
        ms.push(t)
        await sbx.removeCodeContext(ctx)
      }
      out[language] = summary(ms)
    }
    return out
  } finally {
    await kill(sbx)
  }
}

try {
  const warmFigures = await warm()
  const createFigures = await createAndFirstCall()
  const contexts = await kernelStarts()
  console.log(JSON.stringify({ runs, warmup, creates, starts, base_template: baseTemplate, ...warmFigures, ...createFigures, contexts }))
} finally {
  await Promise.all([...live].map((s) => s.kill().catch(() => {})))
}
