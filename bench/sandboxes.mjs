// Sandbox-creation benchmark client for bench/sandboxes.sh: the E2B control plane of a running
// `cove serve` (fetch, keep-alive) and the `runc run` baselines. Every mode prints one JSON line.
//
//   cove-seq N                 N sequential creates, each followed by its DELETE (not timed)
//   cove-conc N C              N creates with C in flight (timed as a whole), then DELETE them all
//   cove-create N C FILE       N creates with C in flight; the ids go to FILE, one a line (kept)
//   cove-kill C FILE           DELETE the ids in FILE, C in flight
//   runc-seq N ROOT BUNDLE     N sequential `runc run` (foreground, the bundle's process)
//   runc-conc N C ROOT BUNDLE  N `runc run` with C in flight (timed as a whole)
//   runc-detach N C ROOT BUNDLE  N `runc run -d` with C in flight (left running)
//   runc-delete C ROOT         `runc delete -f` every container of ROOT, C in flight
//   memory KIND SHIM_PID [FILE|ROOT]  host memory now (2 s); KIND cove (ids in FILE) or runc (ROOT)
//
// Env for the cove modes: COVE_API (e.g. http://127.0.0.1:3100), COVE_KEY, COVE_TIMEOUT_S, and
// COVE_IDS_LOG: a file every created id is appended to (the caller's leftover check). COVE_BENCH_TMP:
// a directory for runc's stderr files.
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync, appendFileSync, readdirSync, existsSync, openSync, closeSync, rmSync } from 'node:fs'

const api = process.env.COVE_API ?? 'http://127.0.0.1:3100'
const key = process.env.COVE_KEY ?? ''
const sandboxTimeout = Number(process.env.COVE_TIMEOUT_S ?? 300)

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? s[Math.min(s.length - 1, Math.round(p * (s.length - 1)))] : NaN
}
const r1 = (x) => Math.round(x * 10) / 10
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')

// Failures are counted, the first one's body kept (an error under load is a finding, not a crash).
const failures = { count: 0, first: null }
const fail = (what) => {
  failures.count++
  if (failures.first === null) failures.first = String(what).slice(0, 500)
}

async function create() {
  const t0 = performance.now()
  let res
  try {
    res = await fetch(`${api}/v2/sandboxes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ templateID: 'base', timeout: sandboxTimeout }),
    })
  } catch (e) {
    fail(`POST /v2/sandboxes: ${e.cause?.message ?? e.message}`)
    return null
  }
  const text = await res.text()
  const ms = performance.now() - t0
  if (res.status !== 201) {
    fail(`POST /v2/sandboxes → ${res.status}: ${text}`)
    return null
  }
  const id = JSON.parse(text).sandboxID
  if (process.env.COVE_IDS_LOG) appendFileSync(process.env.COVE_IDS_LOG, id + '\n')
  return { id, ms }
}

async function kill(id) {
  try {
    const res = await fetch(`${api}/sandboxes/${id}`, { method: 'DELETE', headers: { 'x-api-key': key } })
    const text = await res.text()
    if (res.status !== 204) fail(`DELETE /sandboxes/${id} → ${res.status}: ${text}`)
  } catch (e) {
    fail(`DELETE /sandboxes/${id}: ${e.cause?.message ?? e.message}`)
  }
}

// Runs fn(i) for i in [0, n) with at most c in flight.
async function pool(n, c, fn) {
  let next = 0
  const worker = async () => {
    while (next < n) await fn(next++)
  }
  await Promise.all(Array.from({ length: Math.min(c, n) }, worker))
}

// One process to completion; resolves with its exit code and stderr. Stderr goes to a file, not a
// pipe: `runc run -d` hands its stdio to the container, which would hold a pipe open for ever.
let spawned = 0
function run(cmd, args) {
  const errFile = `${process.env.COVE_BENCH_TMP ?? '/tmp'}/stderr-${process.pid}-${spawned++}`
  const fd = openSync(errFile, 'w+')
  return new Promise((resolve) => {
    const done = (code, msg) => {
      closeSync(fd)
      const err = msg ?? readOr(errFile, '')
      rmSync(errFile, { force: true })
      resolve({ code, err })
    }
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', fd] })
    p.on('error', (e) => done(-1, e.message))
    p.on('exit', (code) => done(code))
  })
}

async function runc(args) {
  const r = await run('runc', args)
  if (r.code !== 0) fail(`runc ${args.join(' ')} → exit ${r.code}: ${r.err.trim()}`)
  return r.code === 0
}

const kib = (text, field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN)
const readOr = (path, fallback) => {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return fallback
  }
}

// The memory cgroup (v1, else v2) a pid is in, as a directory under /sys/fs/cgroup.
function memoryCgroup(pid) {
  const lines = readOr(`/proc/${pid}/cgroup`, '').split('\n')
  const v1 = lines.find((l) => /^\d+:memory:/.test(l))
  if (v1) return `/sys/fs/cgroup/memory${v1.split(':')[2]}`
  const v2 = lines.find((l) => l.startsWith('0::'))
  return v2 ? `/sys/fs/cgroup${v2.slice(3)}` : null
}
const cgroupBytes = (dir) =>
  Number(readOr(`${dir}/memory.usage_in_bytes`, '') || readOr(`${dir}/memory.current`, '') || NaN)

// Host memory now, and what the sandboxes' own processes and cgroups hold.
// MemAvailable is the median of 5 readings 0.4 s apart (it is host-wide and jitters).
async function memory(kind, shimPid, where) {
  const readings = []
  for (let i = 0; i < 5; i++) {
    if (i) await new Promise((r) => setTimeout(r, 400))
    readings.push(kib(readFileSync('/proc/meminfo', 'utf8'), 'MemAvailable'))
  }
  const meminfo = readFileSync('/proc/meminfo', 'utf8')
  let pids = []
  if (kind === 'cove') {
    for (const id of readOr(where, '').split('\n').filter(Boolean)) {
      const dir = ['/sys/fs/cgroup/memory/cove', '/sys/fs/cgroup/cove'].map((d) => `${d}/${id}`).find(existsSync)
      if (dir) pids.push(...readOr(`${dir}/cgroup.procs`, '').split('\n').filter(Boolean).map(Number))
    }
  } else if (kind === 'runc') {
    for (const id of existsSync(where) ? readdirSync(where) : []) {
      const state = readOr(`${where}/${id}/state.json`, '')
      if (state) pids.push(JSON.parse(state).init_process_pid)
    }
  }
  let rss = 0, pss = 0, live = 0
  const groups = new Set()
  for (const pid of pids) {
    const status = readOr(`/proc/${pid}/status`, '')
    if (!status) continue
    live++
    rss += kib(status, 'VmRSS') || 0
    pss += kib(readOr(`/proc/${pid}/smaps_rollup`, ''), 'Pss') || 0
    const cg = memoryCgroup(pid)
    if (cg) groups.add(cg)
  }
  let cgBytes = 0
  for (const g of groups) cgBytes += cgroupBytes(g) || 0
  const shimStatus = shimPid > 0 ? readOr(`/proc/${shimPid}/status`, '') : ''
  return {
    mem_available_kib: pct(readings, 0.5),
    mem_free_kib: kib(meminfo, 'MemFree'),
    slab_kib: kib(meminfo, 'Slab'),
    shim_rss_kib: shimStatus ? kib(shimStatus, 'VmRSS') : 0,
    processes: live,
    rss_sum_kib: rss,
    pss_sum_kib: pss,
    cgroups: groups.size,
    cgroup_usage_sum_kib: Math.round(cgBytes / 1024),
  }
}

const [mode, ...a] = process.argv.slice(2)
const num = (s) => {
  const n = Number(s)
  if (!Number.isInteger(n) || n < 1) throw new Error(`${mode}: expected a positive integer, got '${s}'`)
  return n
}
const latency = (xs) => ({ n: xs.length, p50_ms: r1(pct(xs, 0.5)), p99_ms: r1(pct(xs, 0.99)) })

switch (mode) {
  case 'cove-seq': {
    const n = num(a[0])
    const xs = []
    for (let i = 0; i < n; i++) {
      const s = await create()
      if (!s) continue
      xs.push(s.ms)
      await kill(s.id)
    }
    out({ ...latency(xs), failures: failures.count, first_error: failures.first })
    break
  }
  case 'cove-conc': {
    const [n, c] = [num(a[0]), num(a[1])]
    const made = [], xs = []
    const t0 = performance.now()
    await pool(n, c, async () => {
      const s = await create()
      if (s) made.push(s.id), xs.push(s.ms)
    })
    const wall = (performance.now() - t0) / 1000
    await pool(made.length, c, (i) => kill(made[i]))
    out({ ...latency(xs), wall_s: r1(wall), per_s: r1(made.length / wall), failures: failures.count, first_error: failures.first })
    break
  }
  case 'cove-create': {
    const [n, c, file] = [num(a[0]), num(a[1]), a[2]]
    const made = []
    const t0 = performance.now()
    await pool(n, c, async () => {
      const s = await create()
      if (s) made.push(s.id), writeFileSync(file, made.join('\n') + '\n')
    })
    out({ created: made.length, wall_s: r1((performance.now() - t0) / 1000), failures: failures.count, first_error: failures.first })
    break
  }
  case 'cove-kill': {
    const [c, file] = [num(a[0]), a[1]]
    const ids = readOr(file, '').split('\n').filter(Boolean)
    await pool(ids.length, c, (i) => kill(ids[i]))
    out({ killed: ids.length - failures.count, failures: failures.count, first_error: failures.first })
    break
  }
  case 'runc-seq': {
    const [n, root, bundle] = [num(a[0]), a[1], a[2]]
    const xs = []
    for (let i = 0; i < n; i++) {
      const t0 = performance.now()
      if (await runc(['--root', root, 'run', '--bundle', bundle, `cove-bench-seq-${i}`])) xs.push(performance.now() - t0)
    }
    out({ ...latency(xs), failures: failures.count, first_error: failures.first })
    break
  }
  case 'runc-conc': {
    const [n, c, root, bundle] = [num(a[0]), num(a[1]), a[2], a[3]]
    let ok = 0
    const t0 = performance.now()
    await pool(n, c, async (i) => {
      if (await runc(['--root', root, 'run', '--bundle', bundle, `cove-bench-conc-${i}`])) ok++
    })
    const wall = (performance.now() - t0) / 1000
    out({ n: ok, wall_s: r1(wall), per_s: r1(ok / wall), failures: failures.count, first_error: failures.first })
    break
  }
  case 'runc-detach': {
    const [n, c, root, bundle] = [num(a[0]), num(a[1]), a[2], a[3]]
    let ok = 0
    const t0 = performance.now()
    await pool(n, c, async (i) => {
      if (await runc(['--root', root, 'run', '-d', '--bundle', bundle, `cove-bench-idle-${i}`])) ok++
    })
    out({ created: ok, wall_s: r1((performance.now() - t0) / 1000), failures: failures.count, first_error: failures.first })
    break
  }
  case 'runc-delete': {
    const [c, root] = [num(a[0]), a[1]]
    const ids = existsSync(root) ? readdirSync(root) : []
    await pool(ids.length, c, (i) => runc(['--root', root, 'delete', '-f', ids[i]]))
    out({ deleted: ids.length - failures.count, failures: failures.count, first_error: failures.first })
    break
  }
  case 'memory':
    out(await memory(a[0], Number(a[1] ?? 0), a[2] ?? ''))
    break
  default:
    console.error('usage: see the header of bench/sandboxes.mjs')
    process.exit(2)
}
