// The TLS edge as clients with only E2B_DOMAIN, E2B_API_KEY and NODE_EXTRA_CA_CERTS see it:
// ALPN and certificates, user ports at https://<port>-<id>.<domain> (servers on every address,
// on 127.0.0.1 and on ::1 only, closed ports, killed sandboxes), sandbox.<domain> with the
// E2b-Sandbox-* headers, strict host grammar, envd's token and internal routes, traffic access
// tokens, CORS preflights, and a kill cutting a running command. run.sh runs this file twice:
// with the shim offering h2 and with http2 = false (COVE_E2E_HTTP2); raw checks go over every
// protocol the shim offers.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'

import { Sandbox, TimeoutError } from 'e2b'
import {
  apiHost,
  domain,
  expectedAlpn,
  parseJson,
  phaseLabel,
  portHost,
  protocols,
  abortAfterFirstChunk,
  request,
  sharedHost,
  shimOffersH2,
  splitHost,
  tlsProbe,
  wsConnect,
} from './edge_client.mjs'
import { RUN_ID, T, TLS_CLIENT, env, killTracked, newSandbox, pollUntil, settleWithin, sh } from './helpers.mjs'
import { startEchoServer, startHttpServer } from './sandbox_servers.mjs'

after(killTracked)

const P = phaseLabel()
const JSON_TYPE = 'application/json; charset=utf-8'
const TEXT_TYPE = 'text/plain; charset=utf-8'
const ENVD = 49983
const ECHO_PORT = 8765

const notFoundBody = (id) => `{"sandboxId":"${id}","message":"The sandbox was not found","code":502}`
const portClosedBody = (id, port) =>
  `{"sandboxId":"${id}","message":"The sandbox is running but port is not open","port":${port},"code":502}`
const internalRouteBody = (path) =>
  `{"message":"This endpoint is reserved for the E2B control plane and is not reachable through the sandbox URL","path":${JSON.stringify(path)},"code":404}`
const tokenMissingBody = (id) =>
  `{"sandboxId":"${id}","message":"Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing","code":403}`
const tokenInvalidBody = (id) =>
  `{"sandboxId":"${id}","message":"Sandbox is secured with traffic access token. Provided token in header 'e2b-traffic-access-token' is invalid","code":403}`
const envdUnauthorizedBody =
  '{"code":401,"message":"unauthorized access, please provide a valid access token or method signing if supported"}\n'

/** Asserts status, content type and the exact body of an answer; `what` names the request. */
function assertAnswer(res, status, type, body, what) {
  const show = `${what}: got ${res.status} ${JSON.stringify(res.headers['content-type'])} ${JSON.stringify(res.body.slice(0, 400))}`
  assert.equal(res.status, status, show)
  if (type !== undefined) assert.equal(res.headers['content-type'], type, show)
  if (body !== undefined) assert.equal(res.body, body, show)
}

/** Comma-separated header value → sorted lower-case tokens. */
const tokens = (v) =>
  String(v ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)
    .sort()

/** A sandbox id that no sandbox has (the id alphabet, 20 characters). */
const unknownId = () => `nosuch${randomBytes(7).toString('hex')}`

const connectJson = { 'content-type': 'application/json', 'connect-protocol-version': '1' }

test('the TLS phase runs with a TLS-edge client environment only', () => {
  assert.ok(TLS_CLIENT, 'E2B_DOMAIN is not set: run this file through run.sh')
  for (const name of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_DEBUG']) {
    assert.equal(process.env[name], undefined, `${name} is set`)
  }
  assert.ok(readFileSync(env('NODE_EXTRA_CA_CERTS'), 'utf8').includes('BEGIN CERTIFICATE'))
})

describe(`${P} TLS: ALPN, certificate, local CA`, () => {
  test('api.<domain> negotiates the expected protocol, with a certificate for the domain', T, async () => {
    const r = await tlsProbe(apiHost())
    assert.equal(r.authorized, true, `certificate not trusted: ${r.authorizationError}`)
    assert.equal(r.alpn, expectedAlpn(), `ALPN offering h2 and http/1.1 (http2 ${shimOffersH2()})`)
    const { name } = splitHost(domain())
    const sans = r.subjectaltname.split(',').map((s) => s.trim())
    for (const want of [`DNS:*.${name}`, `DNS:api.${name}`, `DNS:${name}`]) {
      assert.ok(sans.includes(want), `certificate SANs ${JSON.stringify(sans)} lack ${want}`)
    }
    const h1 = await tlsProbe(apiHost(), ['http/1.1'])
    assert.equal(h1.alpn, 'http/1.1', 'ALPN offering only http/1.1')
  })

  test('an h2-only client gets h2 exactly when the shim offers it', T, async () => {
    if (shimOffersH2()) {
      const r = await tlsProbe(apiHost(), ['h2'])
      assert.equal(r.alpn, 'h2', 'ALPN offering only h2 to a shim with http2 = true')
      return
    }
    // Either the handshake fails (no_application_protocol) or it ends without ALPN.
    const outcome = await tlsProbe(apiHost(), ['h2']).then(
      (r) => r.alpn,
      () => 'handshake refused',
    )
    assert.notEqual(outcome, 'h2', 'the shim negotiated h2 with http2 = false')
  })

  test('the local CA: ca.pem in the state dir signs the edge; private keys are readable by root only', T, async () => {
    const state = env('COVE_E2E_STATE')
    const ca = readFileSync(join(state, 'ca.pem'), 'utf8')
    assert.match(ca, /^-----BEGIN CERTIFICATE-----/m)
    assert.doesNotMatch(ca, /PRIVATE KEY/, 'ca.pem (handed to clients) contains a private key')
    assert.equal(readFileSync(env('NODE_EXTRA_CA_CERTS'), 'utf8'), ca, 'NODE_EXTRA_CA_CERTS is <state>/ca.pem')
    // Every private key the shim keeps (the CA's and the leaf's), wherever in the state dir's
    // top level or its tls/ directory (not the sandboxes), is closed to group and others.
    const files = []
    for (const dir of [state, join(state, 'tls')]) {
      let names = []
      try {
        names = readdirSync(dir)
      } catch {
        continue
      }
      for (const f of names) {
        const path = join(dir, f)
        const st = statSync(path)
        if (st.isFile() && st.size < 1024 * 1024) files.push(path)
      }
    }
    const keys = files.filter((f) => readFileSync(f, 'utf8').includes('PRIVATE KEY'))
    assert.ok(keys.length >= 2, `expected the CA's and the leaf's private keys, found: ${keys.map((f) => f.slice(state.length)).join(' ')}`)
    for (const f of keys) {
      const mode = statSync(f).mode & 0o777
      assert.equal(mode & 0o077, 0, `${f.slice(state.length)} has mode ${mode.toString(8)}`)
    }
  })

  test('the control plane at api.<domain>: 401 without a key, 200 with it, over each protocol', T, async () => {
    for (const protocol of protocols()) {
      const url = `https://${apiHost()}/v2/sandboxes`
      const no = await request(url, { protocol })
      assert.equal(no.alpn, protocol, 'negotiated protocol')
      assert.equal(no.status, 401, `GET /v2/sandboxes without a key over ${protocol}: ${no.status} ${no.body}`)
      assert.equal(parseJson(no.body, 'the 401 body').code, 401)
      const yes = await request(url, { protocol, headers: { 'X-API-KEY': env('E2B_API_KEY') } })
      assert.equal(yes.status, 200, `GET /v2/sandboxes with the key over ${protocol}: ${yes.status} ${yes.body}`)
      assert.ok(Array.isArray(parseJson(yes.body, 'the list')), 'the list is an array')
    }
  })
})

describe(`${P} user ports at https://<port>-<id>.<domain>`, () => {
  let sbx
  let id
  const marker = `cove-tls-marker ${RUN_ID}\n`
  const bigSha = {}
  let echo

  before(async () => {
    sbx = await newSandbox({ metadata: { run: RUN_ID, file: 'tls', part: 'ports' }, timeoutMs: 600_000 })
    id = sbx.sandboxId
    await sbx.files.write('/home/user/www/marker.txt', marker)
    // 3 MiB of random bytes: more than any HTTP/2 flow-control window's default.
    await sh(sbx, 'head -c 3145728 /dev/urandom > /home/user/www/big.bin')
    bigSha.inside = (await sh(sbx, 'sha256sum /home/user/www/big.bin')).split(' ')[0]
    await startHttpServer(sbx, 8000, { dir: '/home/user/www' })
    await startHttpServer(sbx, 8001, { dir: '/home/user/www', bind: '127.0.0.1' })
    await startHttpServer(sbx, 8003, { dir: '/home/user/www', bind: '::1' })
    echo = await startEchoServer(sbx, ECHO_PORT)
    // Nothing on 8002.
    assert.equal(await sh(sbx, "ss -Hltn 'sport = :8002'"), '', 'something listens on 8002 inside')
  })

  test('getHost(8000) names the port host; a public sandbox has no traffic token', T, async () => {
    assert.equal(sbx.getHost(8000), `8000-${id}.${domain()}`)
    assert.equal(sbx.trafficAccessToken, undefined)
  })

  test('python3 -m http.server 8000 is reachable at https://${getHost(8000)} (fetch)', T, async () => {
    const res = await fetch(`https://${sbx.getHost(8000)}/marker.txt`)
    assert.equal(res.status, 200)
    assert.equal(await res.text(), marker)
    const index = await fetch(`https://${sbx.getHost(8000)}/`)
    assert.equal(index.status, 200)
    assert.match(await index.text(), /marker\.txt/, 'the directory listing')
  })

  test('servers bound to 0.0.0.0, 127.0.0.1 and ::1 inside are all reachable, over each protocol', T, async () => {
    for (const protocol of protocols()) {
      for (const port of [8000, 8001, 8003]) {
        const res = await request(`https://${portHost(id, port)}/marker.txt`, { protocol })
        assertAnswer(res, 200, undefined, marker, `GET marker.txt on port ${port} over ${protocol}`)
        assert.equal(res.alpn, protocol)
      }
    }
  })

  test('a 3 MiB download arrives intact, over each protocol', T, async () => {
    for (const protocol of protocols()) {
      const res = await request(`https://${portHost(id, 8000)}/big.bin`, { protocol, timeoutMs: 60_000 })
      assert.equal(res.status, 200, `big.bin over ${protocol}`)
      assert.equal(res.headers['content-length'], '3145728')
      const got = createHash('sha256').update(res.bytes).digest('hex')
      assert.equal(got, bigSha.inside, `sha256 of big.bin over ${protocol}`)
    }
  })

  test('request headers, body and Host reach the server in the sandbox, over each protocol', T, async () => {
    for (const protocol of protocols()) {
      const res = await request(`https://${portHost(id, ECHO_PORT)}/echo?x=1`, {
        protocol,
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'x-cove-test': 'through the edge' },
        body: 'posted body ✓',
      })
      assert.equal(res.status, 200, `POST /echo over ${protocol}: ${res.body}`)
      const seen = parseJson(res.body, 'the echo')
      assert.equal(seen.method, 'POST')
      assert.equal(seen.path, '/echo?x=1')
      assert.equal(seen.body, 'posted body ✓')
      assert.equal(seen.headers['x-cove-test'], 'through the edge')
      assert.equal(seen.headers.host, portHost(id, ECHO_PORT), 'Host reaches the server unchanged')
    }
  })

  test('a response the server sends bit by bit arrives bit by bit, over each protocol', T, async () => {
    // 6 lines, one every 400 ms: an edge that buffered the body would deliver them all at once.
    for (const protocol of protocols()) {
      const res = await request(`https://${portHost(id, ECHO_PORT)}/stream?n=6&ms=400`, { protocol })
      assert.equal(res.status, 200, `GET /stream over ${protocol}`)
      assert.equal(res.body, [0, 1, 2, 3, 4, 5].map((i) => `tick ${i}\n`).join(''))
      const first = res.arrivals.find((a) => a.text.includes('tick 0'))
      const last = res.arrivals.find((a) => a.text.includes('tick 5'))
      const show = `arrivals over ${protocol}: ${JSON.stringify(res.arrivals)}`
      assert.ok(first && last, show)
      assert.ok(!first.text.includes('tick 1'), `tick 0 and tick 1 arrived together: ${show}`)
      assert.ok(last.ms - first.ms >= 1_500, `the 2 s of pacing shrank to ${last.ms - first.ms} ms: ${show}`)
    }
  })

  test('a client giving up on a response reaches the server in the sandbox, over each protocol', T, async () => {
    // 150 lines, one every 200 ms (30 s): the server must see its connection break long before.
    for (const protocol of protocols()) {
      const tag = protocol === 'h2' ? 'h2' : 'h1'
      const started = Date.now()
      const { text, finish } = await abortAfterFirstChunk(
        `https://${portHost(id, ECHO_PORT)}/stream?n=150&ms=200&tag=${tag}`,
        { protocol },
      )
      try {
        assert.match(text, /^tick 0\n/)
        await pollUntil(() => echo.stdout, (out) => out.includes(`stream ${tag} aborted`), {
          timeoutMs: 10_000,
          intervalMs: 200,
          what: `the server in the sandbox noticing that the ${protocol} client left (its stdout)`,
        })
        assert.ok(Date.now() - started < 15_000, 'the abort took as long as the whole response')
      } finally {
        finish()
      }
    }
  })

  test('a closed port answers 502 with the port message', T, async () => {
    for (const protocol of protocols()) {
      const res = await request(`https://${portHost(id, 8002)}/`, { protocol })
      assertAnswer(res, 502, JSON_TYPE, portClosedBody(id, 8002), `GET / on closed port 8002 over ${protocol}`)
    }
    const viaFetch = await fetch(`https://${sbx.getHost(8002)}/`)
    assert.equal(viaFetch.status, 502)
    assert.equal(await viaFetch.text(), portClosedBody(id, 8002))
  })

  test('sandbox.<domain> routes by E2b-Sandbox-Id / E2b-Sandbox-Port', T, async () => {
    for (const protocol of protocols()) {
      const health = await request(`https://${sharedHost()}/health`, {
        protocol,
        headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': String(ENVD) },
      })
      assertAnswer(health, 204, undefined, '', `GET /health at sandbox.<domain> with headers over ${protocol}`)
      const page = await request(`https://${sharedHost()}/marker.txt`, {
        protocol,
        headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '8000' },
      })
      assertAnswer(page, 200, undefined, marker, `GET marker.txt at sandbox.<domain>, port 8000, over ${protocol}`)
      const one = await request(`https://${sharedHost()}/health`, { protocol, headers: { 'E2b-Sandbox-Id': id } })
      assertAnswer(one, 400, TEXT_TYPE, 'missing header\n', `sandbox.<domain> with only E2b-Sandbox-Id over ${protocol}`)
      // On a port host the headers are not what routes.
      const byHost = await request(`https://${portHost(id, 8000)}/marker.txt`, {
        protocol,
        headers: { 'E2b-Sandbox-Id': unknownId(), 'E2b-Sandbox-Port': String(ENVD) },
      })
      assertAnswer(byHost, 200, undefined, marker, `port host 8000 with headers naming another sandbox over ${protocol}`)
    }
  })

  test('the host grammar: bad port 400, no port label 400, unknown sandbox 502', T, async () => {
    for (const protocol of protocols()) {
      for (const port of [99999, 0, 65536]) {
        const res = await request(`https://${port}-${id}.${domain()}/`, { protocol })
        assertAnswer(res, 400, TEXT_TYPE, 'Invalid sandbox port\n', `port ${port} over ${protocol}`)
      }
      const noDash = await request(`https://nodash${id}.${domain()}/`, { protocol })
      assertAnswer(noDash, 400, TEXT_TYPE, 'Invalid host\n', `a label without <port>- over ${protocol}`)
      const other = unknownId()
      const unknown = await request(`https://${ENVD}-${other}.${domain()}/health`, { protocol })
      assertAnswer(unknown, 502, JSON_TYPE, notFoundBody(other), `an unknown sandbox over ${protocol}`)
      const unknownUser = await request(`https://8000-${other}.${domain()}/`, { protocol })
      assertAnswer(unknownUser, 502, JSON_TYPE, notFoundBody(other), `a user port of an unknown sandbox over ${protocol}`)
    }
  })

  test('envd RPC without X-Access-Token is 401; with it, 200', T, async () => {
    const url = `https://${portHost(id, ENVD)}/process.Process/List`
    for (const protocol of protocols()) {
      const no = await request(url, { protocol, method: 'POST', headers: connectJson, body: '{}' })
      assertAnswer(no, 401, JSON_TYPE, envdUnauthorizedBody, `process.Process/List without a token over ${protocol}`)
      const wrong = await request(url, {
        protocol,
        method: 'POST',
        headers: { ...connectJson, 'X-Access-Token': 'not-the-token' },
        body: '{}',
      })
      assertAnswer(wrong, 401, JSON_TYPE, envdUnauthorizedBody, `process.Process/List with a wrong token over ${protocol}`)
      const yes = await request(url, {
        protocol,
        method: 'POST',
        headers: { ...connectJson, 'X-Access-Token': sbx.envdAccessToken },
        body: '{}',
      })
      assert.equal(yes.status, 200, `process.Process/List with the token over ${protocol}: ${yes.body}`)
      const list = parseJson(yes.body, 'the process list')
      assert.ok(
        list.processes?.some((p) => /http\.server 8000/.test(JSON.stringify(p.config))),
        `the servers are not in the process list: ${yes.body.slice(0, 400)}`,
      )
    }
  })

  test("envd's internal routes are 404 from outside", T, async () => {
    const base = `https://${portHost(id, ENVD)}`
    for (const protocol of protocols()) {
      for (const [path, shown] of [
        ['/init', '/init'],
        ['/%69nit', '/init'],
        ['/fsfreeze', '/fsfreeze'],
        ['/upgrade?x=1', '/upgrade'],
      ]) {
        const res = await request(base, {
          protocol,
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', 'X-Access-Token': sbx.envdAccessToken },
          body: '{"accessToken":"hijack"}',
        })
        assertAnswer(res, 404, JSON_TYPE, internalRouteBody(shown), `POST ${path} on envd over ${protocol}`)
      }
    }
    // The sandbox still works with its own token (the /init body above went nowhere).
    assert.equal(await sh(sbx, 'echo still-mine'), 'still-mine')
  })

  test('CORS: the edge answers a preflight the user server does not; envd answers its own', T, async () => {
    const origin = 'https://app.example'
    const wantHeaders = 'x-custom-one, content-type'
    for (const protocol of protocols()) {
      // python's http.server answers OPTIONS with 501: the edge answers the preflight instead.
      const pre = await request(`https://${portHost(id, 8000)}/marker.txt`, {
        protocol,
        method: 'OPTIONS',
        headers: { Origin: origin, 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': wantHeaders },
      })
      const show = `preflight to port 8000 over ${protocol}: ${pre.status} ${JSON.stringify(pre.headers)}`
      assert.equal(pre.status, 204, show)
      assert.ok(['*', origin].includes(pre.headers['access-control-allow-origin']), show)
      assert.ok(tokens(pre.headers['access-control-allow-methods']).includes('put'), show)
      assert.deepEqual(tokens(pre.headers['access-control-allow-headers']), tokens(wantHeaders), show)

      // A server that answers OPTIONS itself is left to do so.
      const own = await request(`https://${portHost(id, ECHO_PORT)}/own-cors`, {
        protocol,
        method: 'OPTIONS',
        headers: { Origin: origin, 'Access-Control-Request-Method': 'PUT' },
      })
      const ownShow = `preflight to a server that answers it, over ${protocol}: ${own.status} ${JSON.stringify(own.headers)}`
      assert.equal(own.status, 204, ownShow)
      assert.equal(own.headers['x-cors-by'], 'upstream', ownShow)
      assert.equal(own.headers['access-control-allow-origin'], 'https://own.example', ownShow)

      // To envd (49983) the preflight is passed through: envd's own answer (rs/cors: the method
      // echoed, Max-Age 7200), before its token check.
      const envd = await request(`https://${portHost(id, ENVD)}/process.Process/List`, {
        protocol,
        method: 'OPTIONS',
        headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': wantHeaders },
      })
      const envdShow = `preflight to envd over ${protocol}: ${envd.status} ${JSON.stringify(envd.headers)}`
      assert.equal(envd.status, 204, envdShow)
      assert.equal(envd.headers['access-control-allow-origin'], '*', envdShow)
      assert.equal(envd.headers['access-control-allow-methods'], 'POST', envdShow)
      assert.equal(envd.headers['access-control-allow-headers'], wantHeaders, envdShow)
      assert.equal(envd.headers['access-control-max-age'], '7200', envdShow)
    }
  })

  test('after kill: the user port and envd answer 502 with the exact not-found body', T, async () => {
    assert.equal(await Sandbox.kill(id), true)
    for (const protocol of protocols()) {
      const page = await request(`https://${portHost(id, 8000)}/marker.txt`, { protocol })
      assertAnswer(page, 502, JSON_TYPE, notFoundBody(id), `port 8000 after kill over ${protocol}`)
      const health = await request(`https://${portHost(id, ENVD)}/health`, { protocol })
      assertAnswer(health, 502, JSON_TYPE, notFoundBody(id), `envd /health after kill over ${protocol}`)
      const shared = await request(`https://${sharedHost()}/health`, {
        protocol,
        headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': String(ENVD) },
      })
      assertAnswer(shared, 502, JSON_TYPE, notFoundBody(id), `sandbox.<domain> /health after kill over ${protocol}`)
    }
    const viaFetch = await fetch(`https://${sbx.getHost(8000)}/`)
    assert.equal(viaFetch.status, 502)
    assert.equal(await viaFetch.text(), notFoundBody(id))
    assert.equal(await sbx.isRunning(), false, 'isRunning() after kill')
  })
})

describe(`${P} allowPublicTraffic: false`, () => {
  let sbx
  let id
  const echoUrl = () => `https://${portHost(id, ECHO_PORT)}/headers`

  before(async () => {
    sbx = await newSandbox({
      metadata: { run: RUN_ID, file: 'tls', part: 'traffic' },
      timeoutMs: 600_000,
      network: { allowPublicTraffic: false },
    })
    id = sbx.sandboxId
    await startEchoServer(sbx, ECHO_PORT)
  })

  test('the sandbox has a traffic token, separate from its envd token', T, async () => {
    assert.equal(typeof sbx.trafficAccessToken, 'string', 'sbx.trafficAccessToken')
    assert.ok(sbx.trafficAccessToken.length >= 16, 'a traffic token of some length')
    assert.equal(typeof sbx.envdAccessToken, 'string')
    assert.notEqual(sbx.trafficAccessToken, sbx.envdAccessToken)
  })

  test('a user port is 403 without the token or with a wrong one, 200 with it; the token is not forwarded', T, async () => {
    for (const protocol of protocols()) {
      const none = await request(echoUrl(), { protocol })
      assertAnswer(none, 403, JSON_TYPE, tokenMissingBody(id), `no traffic token over ${protocol}`)
      const empty = await request(echoUrl(), { protocol, headers: { 'e2b-traffic-access-token': '' } })
      assertAnswer(empty, 403, JSON_TYPE, tokenMissingBody(id), `an empty traffic token over ${protocol}`)
      const wrong = await request(echoUrl(), { protocol, headers: { 'e2b-traffic-access-token': `${sbx.trafficAccessToken}x` } })
      assertAnswer(wrong, 403, JSON_TYPE, tokenInvalidBody(id), `a wrong traffic token over ${protocol}`)
      const envdToken = await request(echoUrl(), { protocol, headers: { 'e2b-traffic-access-token': sbx.envdAccessToken } })
      assertAnswer(envdToken, 403, JSON_TYPE, tokenInvalidBody(id), `the envd token as traffic token over ${protocol}`)

      const ok = await request(echoUrl(), { protocol, headers: { 'E2B-Traffic-Access-Token': sbx.trafficAccessToken } })
      assert.equal(ok.status, 200, `with the traffic token over ${protocol}: ${ok.status} ${ok.body}`)
      const seen = parseJson(ok.body, 'the echo')
      assert.equal(seen.path, '/headers')
      // (Header names only in the messages: the token is a secret, even a test's.)
      const names = Object.keys(seen.headers).join(', ')
      assert.ok(!('e2b-traffic-access-token' in seen.headers), `over ${protocol} the token header reached the sandbox (headers: ${names})`)
      assert.ok(
        !JSON.stringify(seen.headers).includes(sbx.trafficAccessToken),
        `over ${protocol} the token's value reached the sandbox in another header (headers: ${names})`,
      )
    }
    const viaFetch = await fetch(`https://${sbx.getHost(ECHO_PORT)}/headers`, {
      headers: { 'e2b-traffic-access-token': sbx.trafficAccessToken },
    })
    assert.equal(viaFetch.status, 200)
  })

  test('envd needs no traffic token: the SDK works, /health is 204; the traffic token is no envd token', T, async () => {
    assert.equal(await sh(sbx, 'echo envd-works'), 'envd-works')
    await sbx.files.write('/home/user/private.txt', 'private')
    assert.equal(await sbx.files.read('/home/user/private.txt'), 'private')
    for (const protocol of protocols()) {
      const health = await request(`https://${portHost(id, ENVD)}/health`, { protocol })
      assertAnswer(health, 204, undefined, '', `envd /health without a traffic token over ${protocol}`)
      const rpc = await request(`https://${portHost(id, ENVD)}/process.Process/List`, {
        protocol,
        method: 'POST',
        headers: { ...connectJson, 'X-Access-Token': sbx.trafficAccessToken },
        body: '{}',
      })
      assertAnswer(rpc, 401, JSON_TYPE, envdUnauthorizedBody, `the traffic token as X-Access-Token over ${protocol}`)
    }
  })

  test('a WebSocket needs the token too', T, async () => {
    const refused = await wsConnect(portHost(id, ECHO_PORT), '/ws').then(
      (ws) => {
        ws.destroy()
        assert.fail('the WebSocket opened without a traffic token')
      },
      (e) => e,
    )
    assert.ok(refused.response, `expected an HTTP answer, got: ${refused.message}`)
    assert.equal(refused.response.status, 403, refused.message)
    assert.equal(refused.response.body, tokenMissingBody(id))
    const ws = await wsConnect(portHost(id, ECHO_PORT), '/ws', {
      headers: { 'e2b-traffic-access-token': sbx.trafficAccessToken },
    })
    try {
      ws.send('with the token')
      const m = await ws.next()
      assert.equal(m.opcode, 1)
      assert.equal(m.data.toString('utf8'), 'with the token')
    } finally {
      ws.destroy()
    }
  })
})

describe(`${P} kill`, () => {
  test('kill during commands.run cuts the stream: TimeoutError (killed / end of life)', T, async () => {
    const sbx = await newSandbox({ metadata: { run: RUN_ID, file: 'tls', part: 'kill' }, timeoutMs: 120_000 })
    const started = Date.now()
    const run = sbx.commands.run('sleep 30', { timeoutMs: 60_000 })
    const settled = settleWithin(run, 20_000, 'commands.run("sleep 30") after the sandbox was killed')
    await pollUntil(
      () => sh(sbx, 'pgrep -x sleep >/dev/null && echo yes || echo no'),
      (v) => v === 'yes',
      { timeoutMs: 10_000, intervalMs: 200, what: 'sleep 30 running' },
    )
    assert.equal(await Sandbox.kill(sbx.sandboxId), true)
    const outcome = await settled
    assert.equal(outcome.ok, false, `the run resolved: ${JSON.stringify(outcome.value)}`)
    assert.ok(
      outcome.error instanceof TimeoutError,
      `expected TimeoutError, got ${outcome.error?.constructor?.name}: ${outcome.error?.message}`,
    )
    assert.match(outcome.error.message, /sandbox was killed or reached its end of life/)
    assert.ok(Date.now() - started < 25_000, 'the run ended long before sleep 30 would have')
  })
})
