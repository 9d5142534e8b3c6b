// The :49999 HTTP surface where the SDK cannot express the case, with raw fetch through the same
// route the SDK takes (the TLS edge's https://49999-<id>.<domain>, or E2B_SANDBOX_URL with the
// routing headers): health, error statuses and bodies, query strings, the NDJSON wire format
// (ASCII only, no blank lines, the final line, keepalive), null fields, the access token on
// /execute only, and CORS. One sandbox for the file.
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'

import { T, killAll, lazy, newSandbox, rawFetch, rawPost, safeJson } from './helpers.mjs'

const sandbox = lazy(async () => {
  const sbx = await newSandbox()
  // Sandbox.create() defaults to secure: the SDK sends this token on /execute.
  assert.ok(sbx.envdAccessToken, 'the sandbox has an envd access token (secure by default)')
  return sbx
})

after(killAll)

/** POST /execute with the sandbox's own access token, as the SDK sends it. */
async function execute(body, headers = {}) {
  const sbx = await sandbox()
  return rawPost(sbx, '/execute', body, { 'X-Access-Token': sbx.envdAccessToken, ...headers })
}

/** The NDJSON body split into lines, each checked: no blank lines, ASCII only, a trailing \n. */
function ndjson(text) {
  assert.ok(text.endsWith('\n'), `the body ends with a newline: ${JSON.stringify(text.slice(-80))}`)
  const lines = text.slice(0, -1).split('\n')
  for (const line of lines) {
    assert.notEqual(line.trim(), '', `no blank lines: ${JSON.stringify(text.slice(0, 500))}`)
    assert.ok(/^[\x20-\x7e]*$/.test(line), `only printable ASCII on the wire: ${JSON.stringify(line)}`)
  }
  const msgs = lines.map((l) => JSON.parse(l))
  assert.deepEqual(msgs.at(-1), { type: 'end_of_execution' }, 'the last line')
  return msgs
}

describe('routes and errors', () => {
  test('GET /health is 200 "OK"; query strings are ignored', T, async () => {
    const sbx = await sandbox()
    for (const path of ['/health', '/health?source=x']) {
      const res = await rawFetch(sbx, path)
      assert.equal(res.status, 200, path)
      assert.equal(JSON.parse(await res.text()), 'OK', path)
    }
    const list = await rawFetch(sbx, '/contexts?source=x')
    assert.equal(list.status, 200)
    const contexts = await list.json()
    assert.ok(contexts.some((c) => c.language === 'python'), safeJson(contexts))
    const viaQuery = await rawPost(sbx, '/execute?source=ci&x=1', { code: '2+2' }, { 'X-Access-Token': sbx.envdAccessToken })
    assert.equal(viaQuery.status, 200)
    assert.ok(ndjson(viaQuery.text).some((m) => m.type === 'result' && m.text === '4'), viaQuery.text)
  })

  test('an unknown route is 404 {"detail":"Not Found"}; a wrong method is 405', T, async () => {
    const sbx = await sandbox()
    const res = await rawFetch(sbx, '/no/such/route')
    assert.equal(res.status, 404)
    assert.deepEqual(JSON.parse(await res.text()), { detail: 'Not Found' })
    const wrong = await rawFetch(sbx, '/health', { method: 'DELETE' })
    assert.equal(wrong.status, 405)
    assert.deepEqual(JSON.parse(await wrong.text()), { detail: 'Method Not Allowed' })
  })

  test('/execute with both context_id and language is 400 with the official text', T, async () => {
    const r = await execute({ code: '1', context_id: 'x', language: 'python' })
    assert.equal(r.status, 400)
    assert.equal(r.text, 'Only one of context_id or language can be provided')
  })

  test('/execute with a malformed body, no code, or a non-string env value is 422', T, async () => {
    for (const [what, body] of [
      ['malformed JSON', '{"code": '],
      ['missing code', {}],
      ['code not a string', { code: 5 }],
      ['non-string env value', { code: '1', env_vars: { A: 1 } }],
    ]) {
      const r = await execute(body)
      assert.equal(r.status, 422, `${what}: ${r.text}`)
      const parsed = JSON.parse(r.text)
      assert.ok(Array.isArray(parsed.detail), `${what}: a validation detail list: ${r.text}`)
    }
  })

  test('an unknown context is 404 "Context <id> not found" on execute, restart and delete', T, async () => {
    const sbx = await sandbox()
    const run = await execute({ code: '1', context_id: 'nope' })
    assert.equal(run.status, 404)
    assert.equal(run.text, 'Context nope not found')
    const restart = await rawPost(sbx, '/contexts/nope/restart', '')
    assert.equal(restart.status, 404)
    assert.equal(restart.text, 'Context nope not found')
    const del = await rawFetch(sbx, '/contexts/nope', { method: 'DELETE' })
    assert.equal(del.status, 404)
    assert.equal(await del.text(), 'Context nope not found')
  })

  test('POST /contexts with an unknown language is 500 "Failed to create context: ..."', T, async () => {
    const r = await rawPost(await sandbox(), '/contexts', { language: 'cobol' })
    assert.equal(r.status, 500)
    assert.match(r.text, /^Failed to create context/)
  })
})

describe('the NDJSON stream', () => {
  test('ASCII-only lines, number_of_executions first, timestamps, results, the final line', T, async () => {
    const r = await execute({ code: "print('é✓😀')\n'ü'" })
    assert.equal(r.status, 200)
    const msgs = ndjson(r.text)
    assert.equal(msgs[0].type, 'number_of_executions')
    assert.ok(Number.isInteger(msgs[0].execution_count), safeJson(msgs[0]))
    const out = msgs.filter((m) => m.type === 'stdout')
    assert.equal(out.map((m) => m.text).join(''), 'é✓😀\n')
    for (const m of out) assert.ok(!Number.isNaN(Date.parse(m.timestamp)), `timestamp ${m.timestamp}`)
    const results = msgs.filter((m) => m.type === 'result')
    assert.equal(results.length, 1)
    assert.deepEqual(results[0], { type: 'result', text: 'ü', extra: {}, is_main_result: true })
    assert.equal(msgs.filter((m) => m.type === 'end_of_execution').length, 1)
  })

  test('Python-SDK style explicit nulls are accepted', T, async () => {
    const r = await execute({ code: '1+1', context_id: null, language: null, env_vars: null })
    assert.equal(r.status, 200, r.text)
    assert.ok(ndjson(r.text).some((m) => m.type === 'result' && m.text === '2'), r.text)
  })

  test('an error line has name, value and traceback strings; one per execution', T, async () => {
    const r = await execute({ code: 'raise ValueError("bad")' })
    const errors = ndjson(r.text).filter((m) => m.type === 'error')
    assert.equal(errors.length, 1, r.text)
    assert.equal(errors[0].name, 'ValueError')
    assert.equal(errors[0].value, 'bad')
    assert.equal(typeof errors[0].traceback, 'string')
  })

  test('a keepalive line after 5 s of silence', T, async () => {
    const r = await execute({ code: "import time\ntime.sleep(6)\nprint('done')" })
    const msgs = ndjson(r.text)
    const keepalive = msgs.findIndex((m) => m.type === 'keepalive')
    const done = msgs.findIndex((m) => m.type === 'stdout')
    assert.ok(keepalive > 0, `a keepalive line: ${r.text}`)
    assert.ok(keepalive < done, 'sent during the silence, before the output')
  })
})

describe('auth and CORS', () => {
  test('/execute with a wrong X-Access-Token is 401; with the right one 200', T, async () => {
    const bad = await execute({ code: '1+1' }, { 'X-Access-Token': 'wrong-token' })
    assert.equal(bad.status, 401, bad.text)
    const good = await execute({ code: '1+1' })
    assert.equal(good.status, 200, good.text)
  })

  test('the contexts routes work without an access token, as the SDK calls them', T, async () => {
    const sbx = await sandbox()
    const created = await rawPost(sbx, '/contexts', {})
    assert.equal(created.status, 200, created.text)
    const ctx = JSON.parse(created.text)
    assert.equal(ctx.language, 'python')
    assert.equal(ctx.cwd, '/home/user')
    const list = await rawFetch(sbx, '/contexts')
    assert.equal(list.status, 200)
    assert.ok((await list.json()).some((c) => c.id === ctx.id))
    // The SDK sends these with a JSON content type and no body.
    const restart = await rawPost(sbx, `/contexts/${ctx.id}/restart`, '')
    assert.equal(restart.status, 200, restart.text)
    assert.equal(JSON.parse(restart.text), null)
    const del = await rawFetch(sbx, `/contexts/${ctx.id}`, { method: 'DELETE', headers: { 'Content-Type': 'application/json' } })
    assert.equal(del.status, 200)
    assert.equal(JSON.parse(await del.text()), null)
  })

  test('CORS: a preflight is answered; responses allow any origin', T, async () => {
    const sbx = await sandbox()
    const pre = await rawFetch(sbx, '/execute', {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://app.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-access-token',
      },
    })
    assert.equal(pre.status, 200)
    assert.equal(pre.headers.get('access-control-allow-origin'), '*')
    assert.match(pre.headers.get('access-control-allow-methods') ?? '', /POST/)
    assert.match(pre.headers.get('access-control-allow-headers') ?? '', /x-access-token/i)
    const health = await rawFetch(sbx, '/health', { headers: { Origin: 'https://app.example' } })
    assert.equal(health.status, 200)
    assert.equal(health.headers.get('access-control-allow-origin'), '*')
  })
})

describe('allowPublicTraffic: false', () => {
  test('the SDK runs code with the traffic token; without it the edge refuses port 49999', T, async () => {
    const sbx = await newSandbox({ network: { allowPublicTraffic: false } })
    assert.equal(typeof sbx.trafficAccessToken, 'string', 'the sandbox has a traffic token')
    const e = await sbx.runCode('6*7')
    assert.equal(e.error, undefined, safeJson(e.error))
    assert.equal(e.text, '42')
    assert.equal((await sbx.listCodeContexts()).length >= 2, true, 'contexts routes pass the edge with the token')
    // The same request without the token (rawFetch adds it; this one does not).
    const base = process.env.E2B_SANDBOX_URL
    const url = base ? `${base.replace(/\/+$/, '')}/health` : `https://${sbx.getHost(49999)}/health`
    const headers = base ? { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49999' } : {}
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) })
    assert.equal(res.status, 403, await res.text())
  })
})
