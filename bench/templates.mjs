// Template builds through the official npm `e2b` SDK over the shim's plain-HTTP API, for
// bench/templates.sh. Each mode prints one JSON object on stdout (times in seconds).
//   node templates.mjs one-step RUNS     RUNS cold one-step builds on top of `base` (a unique
//        command each), alternating with the baseline: Sandbox.create('base') + commands.run of
//        the same kind of command + kill; then RUNS rebuilds of one built template (all cached)
//        and RUNS Template.exists calls. One untimed warm-up of each first.
//   node templates.mjs sharing           two templates on top of `base` sharing their first step
//        (50 MiB written to /opt/shared) and differing in the second; prints their template ids.
// Env: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY (set by bench/templates.sh).
import { randomBytes } from 'node:crypto'

import { Sandbox, Template } from '../tests/e2e/node_modules/e2b/dist/index.mjs'

const BUILD_TIMEOUT_MS = 600_000
const [mode, runsArg] = process.argv.slice(2)

const nonce = () => randomBytes(6).toString('hex')
const aliasPrefix = `bench-t-${process.pid}-${nonce()}`
let aliasCount = 0
const newAlias = (what) => `${aliasPrefix}-${what}-${++aliasCount}`

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const round = (x) => Math.round(x * 1000) / 1000

async function timed(fn) {
  const start = process.hrtime.bigint()
  const value = await fn()
  return { s: Number(process.hrtime.bigint() - start) / 1e9, value }
}

// The build step's command: its output must differ per run so that its layer key (and so the
// build) is new, while the work stays the same.
const stepCommand = (n) => `echo ${n} > /opt/x`
const oneStep = (cmd) => Template().fromTemplate('base').runCmd(cmd, { user: 'root' })

async function build(template, alias) {
  const { s, value } = await timed(() => Template.build(template, alias, { signal: AbortSignal.timeout(BUILD_TIMEOUT_MS) }))
  if (!value?.templateId) throw new Error(`Template.build('${alias}') returned no template id: ${JSON.stringify(value)}`)
  return { s, templateId: value.templateId }
}

// The floor of a build step: a sandbox from `base`, the command in it, and the sandbox gone.
async function sandboxRun(cmd) {
  return (
    await timed(async () => {
      const sbx = await Sandbox.create('base', { timeoutMs: 120_000 })
      try {
        const r = await sbx.commands.run(cmd, { user: 'root' })
        if (r.exitCode !== 0) throw new Error(`'${cmd}' exited ${r.exitCode}: ${r.stderr}`)
      } finally {
        await sbx.kill()
      }
    })
  ).s
}

async function oneStepMode(runs) {
  // Warm-ups (not counted): the first build on top of base and the first sandbox from it.
  await build(oneStep(stepCommand(nonce())), newAlias('warm'))
  await sandboxRun(stepCommand(nonce()))

  const cold = [], floor = []
  for (let i = 0; i < runs; i++) {
    cold.push((await build(oneStep(stepCommand(nonce())), newAlias('cold'))).s)
    floor.push(await sandboxRun(stepCommand(nonce())))
  }

  // Cached: one template built once (untimed), then built again RUNS times under its alias.
  const cachedTemplate = oneStep(stepCommand(nonce()))
  const cachedAlias = newAlias('cached')
  await build(cachedTemplate, cachedAlias)
  const cached = []
  for (let i = 0; i < runs; i++) cached.push((await build(cachedTemplate, cachedAlias)).s)

  await Template.exists(cachedAlias)
  const exists = []
  for (let i = 0; i < runs; i++) {
    const { s, value } = await timed(() => Template.exists(cachedAlias))
    if (value !== true) throw new Error(`Template.exists('${cachedAlias}') returned ${value}`)
    exists.push(s)
  }
  const summary = (xs) => ({ median_s: round(median(xs)), all_s: xs.map(round) })
  return { runs, cold: summary(cold), sandbox_floor: summary(floor), cached: summary(cached), exists: summary(exists) }
}

async function sharingMode() {
  const shared = 'dd if=/dev/urandom of=/opt/shared bs=1M count=50 status=none'
  const a = await build(Template().fromTemplate('base').runCmd(shared, { user: 'root' }).runCmd('echo a > /opt/a', { user: 'root' }), newAlias('share-a'))
  const b = await build(Template().fromTemplate('base').runCmd(shared, { user: 'root' }).runCmd('echo b > /opt/b', { user: 'root' }), newAlias('share-b'))
  return { a: a.templateId, b: b.templateId, a_build_s: round(a.s), b_build_s: round(b.s) }
}

const runs = Number(runsArg ?? 0)
let out
if (mode === 'one-step' && Number.isInteger(runs) && runs > 0) out = await oneStepMode(runs)
else if (mode === 'sharing') out = await sharingMode()
else {
  console.error('usage: node templates.mjs one-step RUNS | sharing')
  process.exit(2)
}
console.log(JSON.stringify(out))
