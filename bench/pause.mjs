// Pause/resume benchmark client for bench/pause.sh: the E2B control plane of a running `cove serve`
// (plain HTTP, fetch) and the cgroup-freezer baseline. Every mode prints one JSON line (times in ms).
//
//   warm RUNS                  one idle `base` sandbox; RUNS cycles of POST /sandboxes/{id}/pause (204)
//                              and POST /v2/sandboxes/{id}/connect (201), each timed (2 untimed first)
//   freeze GROUP RUNS          RUNS freeze/thaw cycles of a cgroup (v2 cgroup.freeze + cgroup.events,
//                              or v1 freezer.state), each written and then polled until reached
//   cold idle|mem RUNS         one `base` sandbox (mem: holding a python3 with 256 MiB touched, started
//                              through the SDK); RUNS cycles of pause, `cove sandbox checkpoint`, image
//                              size, connect (201). Stops at the first failure and reports it.
//   create RUNS                a snapshot of a fresh `base` sandbox, then RUNS creates from it
//                              alternating with RUNS plain creates of `base` (each killed, untimed)
//
// Env: COVE_API (http://127.0.0.1:3110), COVE_SANDBOX_URL, COVE_KEY, COVE_IDS_LOG (every created
// sandbox id is appended), COVE_BIN and COVE_CONFIG (the checkpoint command), COVE_STATE (the
// shim's state dir: where the checkpoint images are).
import { spawnSync } from 'node:child_process'
import { appendFileSync, readFileSync, readdirSync, statSync, writeFileSync, existsSync } from 'node:fs'

const api = process.env.COVE_API ?? 'http://127.0.0.1:3110'
const key = process.env.COVE_KEY ?? ''
const SANDBOX_TIMEOUT_S = 3600
const MEM_MIB = 256
export const MEM_PROGRAM = `b=bytearray(${MEM_MIB}<<20); [b.__setitem__(i,1) for i in range(0,len(b),4096)]; import time; time.sleep(1e9)`

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? s[Math.min(s.length - 1, Math.round(p * (s.length - 1)))] : NaN
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  if (!s.length) return NaN
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const r2 = (x) => Math.round(x * 100) / 100
const stats = (xs) => ({ n: xs.length, p50: r2(median(xs)), p99: r2(pct(xs, 0.99)), all: xs.map(r2) })
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function call(method, path, body, want) {
  const t0 = performance.now()
  let res
  try {
    res = await fetch(`${api}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  } catch (e) {
    throw new Error(`${method} ${path}: ${e.cause?.message ?? e.message}`)
  }
  const text = await res.text()
  const ms = performance.now() - t0
  if (res.status !== want) throw new Error(`${method} ${path} → ${res.status} (expected ${want}): ${text.slice(0, 500)}`)
  return { ms, json: text ? JSON.parse(text) : null }
}

async function create(templateID = 'base') {
  const { ms, json } = await call('POST', '/v2/sandboxes', { templateID, timeout: SANDBOX_TIMEOUT_S }, 201)
  if (process.env.COVE_IDS_LOG) appendFileSync(process.env.COVE_IDS_LOG, json.sandboxID + '\n')
  return { id: json.sandboxID, ms }
}
const kill = (id) => call('DELETE', `/sandboxes/${id}`, undefined, 204)
const pause = (id) => call('POST', `/sandboxes/${id}/pause`, undefined, 204)
const connect = (id) => call('POST', `/v2/sandboxes/${id}/connect`, { timeout: SANDBOX_TIMEOUT_S }, 201)

// ---- what the host sees of a sandbox ------------------------------------------------------------
const unifiedGroup = (id) => `/sys/fs/cgroup/unified/cove/${id}`
function sandboxPids(id) {
  for (const g of [`/sys/fs/cgroup/pids/cove/${id}`, unifiedGroup(id)]) {
    try {
      return readFileSync(`${g}/cgroup.procs`, 'utf8').split('\n').filter(Boolean).map(Number)
    } catch {}
  }
  return []
}
function procInfo(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const field = (k) => status.match(new RegExp(`^${k}:\\s*(.*)$`, 'm'))?.[1] ?? ''
    return {
      pid,
      cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '),
      rssKiB: Number(field('VmRSS').split(/\s+/)[0] || 0),
      nsPid: Number(field('NSpid').split(/\s+/).at(-1)),
      threads: Number(field('Threads') || 0),
    }
  } catch {
    return null
  }
}
const sandboxProcs = (id) => sandboxPids(id).map(procInfo).filter(Boolean)
const memProc = (id) => sandboxProcs(id).find((p) => p.cmdline.includes('bytearray') && p.cmdline.startsWith('python3'))

function dirBytes(dir) {
  let total = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = `${dir}/${e.name}`
    if (e.isDirectory()) total += dirBytes(p)
    else if (e.isFile()) total += statSync(p).size
  }
  return total
}

// ---- modes -------------------------------------------------------------------------------------
async function warm(runs) {
  const { id } = await create()
  const pauses = []
  const resumes = []
  let error = null
  try {
    for (let i = 0; i < runs + 2; i++) {
      const p = await pause(id)
      const c = await connect(id)
      if (i >= 2) {
        pauses.push(p.ms)
        resumes.push(c.ms)
      }
    }
  } catch (e) {
    error = e.message
  }
  const procs = sandboxProcs(id)
  const freezer = existsSync(`${unifiedGroup(id)}/cgroup.freeze`) ? 'v2' : 'v1'
  await kill(id).catch(() => {})
  out({ pause: stats(pauses), resume: stats(resumes), freezer, processes: procs.length,
    threads: procs.reduce((a, p) => a + p.threads, 0), error })
}

// The kernel floor: the write, then polling the state the kernel reports (as the shim does, without
// its back-off sleeps).
function freeze(group, runs) {
  const v2 = existsSync(`${group}/cgroup.freeze`)
  const set = (on) => {
    const t0 = performance.now()
    if (v2) {
      writeFileSync(`${group}/cgroup.freeze`, on ? '1' : '0')
      const want = `frozen ${on ? 1 : 0}`
      while (!readFileSync(`${group}/cgroup.events`, 'utf8').includes(want));
    } else {
      writeFileSync(`${group}/freezer.state`, on ? 'FROZEN' : 'THAWED')
      const want = on ? 'FROZEN' : 'THAWED'
      while (!readFileSync(`${group}/freezer.state`, 'utf8').startsWith(want)) {
        if (on) writeFileSync(`${group}/freezer.state`, 'FROZEN')
      }
    }
    return performance.now() - t0
  }
  const fr = []
  const th = []
  for (let i = 0; i < runs + 2; i++) {
    const f = set(true)
    const t = set(false)
    if (i >= 2) {
      fr.push(f)
      th.push(t)
    }
  }
  out({ freeze: stats(fr), thaw: stats(th), freezer: v2 ? 'v2' : 'v1' })
}

async function startMemProgram(id) {
  const { Sandbox } = await import('../tests/e2e/node_modules/e2b/dist/index.mjs')
  const sbx = await Sandbox.connect(id, { apiKey: key })
  const handle = await sbx.commands.run(`python3 -c '${MEM_PROGRAM}'`, { background: true, timeoutMs: 0 })
  // The process goes on; only the SDK's output stream (which a pause would cut) is dropped.
  await handle.disconnect()
  const deadline = Date.now() + 120_000
  for (;;) {
    const p = memProc(id)
    if (p && p.rssKiB >= MEM_MIB * 1024) return p
    if (Date.now() > deadline) throw new Error(`the python3 in ${id} did not reach ${MEM_MIB} MiB RSS within 120 s (${JSON.stringify(p)})`)
    await sleep(200)
  }
}

function checkpoint(id) {
  const t0 = performance.now()
  const r = spawnSync(process.env.COVE_BIN, ['sandbox', 'checkpoint', id, '--config', process.env.COVE_CONFIG], { encoding: 'utf8' })
  const ms = performance.now() - t0
  if (r.error) throw new Error(`cove sandbox checkpoint: ${r.error.message}`)
  if (r.status !== 0) throw new Error(`cove sandbox checkpoint ${id} exited ${r.status}: ${(r.stderr + r.stdout).trim()}`)
  return ms
}

async function cold(kind, runs) {
  const res = { kind, pause: [], checkpoint: [], pause_checkpoint: [], resume: [], image_bytes: [], error: null }
  let id
  try {
    ;({ id } = await create())
    res.sandbox = id
    let mem = kind === 'mem' ? await startMemProgram(id) : null
    if (mem) res.mem_rss_kib = mem.rssKiB
    for (let i = 0; i < runs; i++) {
      const p = await pause(id)
      let ck
      try {
        ck = checkpoint(id)
      } catch (e) {
        // Leave it resumable (warm) for the kill; the error is the finding.
        await connect(id).catch(() => {})
        throw e
      }
      const images = `${process.env.COVE_STATE}/checkpoints/sandboxes/${id}`
      if (!existsSync(images)) throw new Error(`no checkpoint images at <state>/checkpoints/sandboxes/${id} after the checkpoint command`)
      const bytes = dirBytes(images)
      if (sandboxProcs(id).length) throw new Error(`the sandbox still has processes after the checkpoint (cold pause should release them)`)
      const c = await connect(id)
      res.pause.push(p.ms)
      res.checkpoint.push(ck)
      res.pause_checkpoint.push(p.ms + ck)
      res.resume.push(c.ms)
      res.image_bytes.push(bytes)
      if (mem) {
        const after = memProc(id)
        if (!after) throw new Error(`after cold resume ${i + 1} the python3 holding ${MEM_MIB} MiB is gone`)
        if (after.nsPid !== mem.nsPid) throw new Error(`after cold resume ${i + 1} the python3 has pid ${after.nsPid} in the sandbox, was ${mem.nsPid}`)
        if (after.rssKiB < MEM_MIB * 1024) res.rss_after_resume_kib = after.rssKiB
        mem = after
      }
    }
  } catch (e) {
    res.error = e.message
  }
  if (id) await kill(id).catch((e) => (res.error ??= `kill: ${e.message}`))
  for (const k of ['pause', 'checkpoint', 'pause_checkpoint', 'resume']) res[k] = stats(res[k])
  res.image_bytes_median = median(res.image_bytes)
  out(res)
}

async function createBench(runs) {
  const res = { with: [], without: [], error: null }
  let source, snapshot
  try {
    ;({ id: source } = await create())
    const s = await call('POST', `/sandboxes/${source}/snapshots`, {}, 201)
    snapshot = s.json.snapshotID
    res.snapshot_ms = r2(s.ms)
    // One untimed create of each first (page cache, the snapshot's images).
    for (let i = 0; i < runs + 1; i++) {
      const a = await create(snapshot)
      await kill(a.id)
      const b = await create('base')
      await kill(b.id)
      if (i >= 1) {
        res.with.push(a.ms)
        res.without.push(b.ms)
      }
    }
  } catch (e) {
    res.error = e.message
  }
  if (source) await kill(source).catch(() => {})
  if (snapshot) await call('DELETE', `/templates/${snapshot}`, undefined, 204).catch((e) => (res.error ??= `delete snapshot: ${e.message}`))
  res.with = stats(res.with)
  res.without = stats(res.without)
  out(res)
}

const [mode, ...a] = process.argv.slice(2)
const int = (s) => {
  const n = Number(s)
  if (!Number.isInteger(n) || n < 1) throw new Error(`${mode}: expected a positive integer, got '${s}'`)
  return n
}
switch (mode) {
  case 'warm':
    await warm(int(a[0]))
    break
  case 'freeze':
    freeze(a[0], int(a[1]))
    break
  case 'cold':
    if (a[0] !== 'idle' && a[0] !== 'mem') throw new Error(`cold: idle or mem, not '${a[0]}'`)
    await cold(a[0], int(a[1]))
    break
  case 'create':
    await createBench(int(a[0]))
    break
  case 'mem-program':
    console.log(MEM_PROGRAM)
    break
  default:
    throw new Error(`unknown mode '${mode}'`)
}
process.exit(0)
