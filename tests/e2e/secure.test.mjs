// A "secure" sandbox (run.sh's second agent, /init with an access token): X-Access-Token on every
// path but envd's exemptions, and signed /files URLs — made by the SDK's downloadUrl/uploadUrl and
// getSignature, and by the documented formula — used with plain fetch.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, test } from 'node:test'

import { AuthenticationError, Sandbox, getSignature } from 'e2b'
import { AGENT_URL, TEST_TIMEOUT, lazy, secureAgent } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }

const UNAUTHORIZED =
  '{"code":401,"message":"unauthorized access, please provide a valid access token or method signing if supported"}\n'
const jsonError = (code, message) => `${JSON.stringify({ code, message })}\n`

/**
 * An SDK handle on the secure agent, built the way Sandbox.connect builds one from the control
 * plane's answer (sandbox id, envd access token, envd version), minus the control plane.
 */
const secure = lazy(async () => {
  const { url, token } = secureAgent()
  const sbx = new Sandbox({ sandboxId: 'cove-secure', envdAccessToken: token, envdVersion: '0.6.13', sandboxUrl: url, debug: true })
  assert.equal(sbx.envdAccessToken, token)
  return { sbx, url, token }
})

/** envd's signature, as documented: v1_ + unpadded base64(sha256(path:op:user:token[:expiration])). */
function sign(path, op, user, token, expiration) {
  const raw = [path, op, user ?? '', token, ...(expiration === undefined ? [] : [String(expiration)])].join(':')
  return 'v1_' + createHash('sha256').update(raw).digest('base64').replace(/=+$/, '')
}

function filesUrl(base, query) {
  const url = new URL('/files', base)
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v))
  return url.toString()
}

function connectJson(base, method, body, headers = {}) {
  return fetch(`${base}/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'connect-protocol-version': '1', ...headers },
    body: JSON.stringify(body),
  })
}

async function assertBody(res, status, text, what) {
  assert.equal(res.status, status, what)
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, what)
  assert.equal(await res.text(), text, what)
}

describe('secure sandbox (access token)', () => {
  test('RPCs and REST without X-Access-Token (or with a wrong one) get 401 with envd\'s body', T, async () => {
    const { url, token } = await secure()
    const wrong = token.replace(/^./, (c) => (c === 'a' ? 'b' : 'a'))
    for (const headers of [{}, { 'x-access-token': wrong }, { 'x-access-token': '' }]) {
      const what = `headers ${JSON.stringify(headers)}`
      await assertBody(await connectJson(url, 'filesystem.Filesystem/Stat', { path: '/' }, headers), 401, UNAUTHORIZED, `Stat, ${what}`)
      await assertBody(await connectJson(url, 'process.Process/List', {}, headers), 401, UNAUTHORIZED, `List, ${what}`)
      const stream = await fetch(`${url}/filesystem.Filesystem/WatchDir`, {
        method: 'POST',
        headers: { 'content-type': 'application/connect+json', ...headers },
        body: Buffer.from([0, 0, 0, 0, 12, ...Buffer.from('{"path":"/"}')]),
      })
      await assertBody(stream, 401, UNAUTHORIZED, `WatchDir, ${what}`)
      for (const path of ['/envs', '/metrics', '/no-such-path']) {
        await assertBody(await fetch(`${url}${path}`, { headers }), 401, UNAUTHORIZED, `GET ${path}, ${what}`)
      }
    }
    // Exempt: health (and /init, /files, checked below).
    assert.equal((await fetch(`${url}/health`)).status, 204)
  })

  test('with the token: RPCs, REST and the SDK work', T, async () => {
    const { sbx, url, token } = await secure()
    const res = await connectJson(url, 'filesystem.Filesystem/Stat', { path: '/home/user' }, { 'x-access-token': token })
    assert.equal(res.status, 200)
    const { entry } = await res.json()
    assert.equal(entry.name, 'user')
    assert.equal(entry.type, 'FILE_TYPE_DIRECTORY')
    assert.equal(entry.owner, 'user')
    assert.equal((await fetch(`${url}/envs`, { headers: { 'x-access-token': token } })).status, 200)

    const info = await sbx.files.write('cove-secure/sdk.txt', 'through the sdk')
    assert.equal(info.path, '/home/user/cove-secure/sdk.txt')
    assert.equal(await sbx.files.read('cove-secure/sdk.txt'), 'through the sdk')
    assert.equal((await sbx.commands.run('whoami')).stdout, 'user\n')
    assert.equal((await sbx.files.getInfo('cove-secure/sdk.txt')).owner, 'user')
  })

  test('/files: a matching header is enough; a wrong header is refused even with a valid signature', T, async () => {
    const { sbx, url, token } = await secure()
    await sbx.files.write('/home/user/cove-secure/h.txt', 'header')
    const ok = await fetch(filesUrl(url, { path: '/home/user/cove-secure/h.txt' }), { headers: { 'x-access-token': token } })
    assert.equal(ok.status, 200)
    assert.equal(await ok.text(), 'header')

    const signed = await sbx.downloadUrl('/home/user/cove-secure/h.txt')
    const wrong = await fetch(signed, { headers: { 'x-access-token': 'f'.repeat(64) } })
    await assertBody(wrong, 401, jsonError(401, 'access token present in header but does not match'))
    await assertBody(await fetch(filesUrl(url, { path: '/home/user/cove-secure/h.txt' })), 401, jsonError(401, 'missing signature query parameter'))
    const upload = await fetch(filesUrl(url, { path: '/home/user/cove-secure/h.txt' }), { method: 'POST', body: new FormData() })
    await assertBody(upload, 401, jsonError(401, 'missing signature query parameter'))
    assert.equal(await sbx.files.read('/home/user/cove-secure/h.txt'), 'header')
  })

  test('signed download URLs (sbx.downloadUrl) work with plain fetch, also for root and relative paths', T, async () => {
    const { sbx, token } = await secure()
    await sbx.files.write('/home/user/cove-secure/dl.txt', 'signed download')
    await sbx.files.write('/root/cove-secure-root.txt', 'root only', { user: 'root' })

    const url = await sbx.downloadUrl('/home/user/cove-secure/dl.txt')
    const parsed = new URL(url)
    assert.equal(parsed.pathname, '/files')
    assert.equal(parsed.searchParams.get('signature'), sign('/home/user/cove-secure/dl.txt', 'read', '', token))
    assert.equal(parsed.searchParams.get('signature_expiration'), null)
    const res = await fetch(url)
    assert.equal(res.status, 200)
    assert.equal(await res.text(), 'signed download')

    const rootUrl = await sbx.downloadUrl('cove-secure-root.txt', { user: 'root' })
    assert.equal(new URL(rootUrl).searchParams.get('username'), 'root')
    const root = await fetch(rootUrl)
    assert.equal(root.status, 200)
    assert.equal(await root.text(), 'root only')

    const rel = await fetch(await sbx.downloadUrl('cove-secure/dl.txt'))
    assert.equal(rel.status, 200)
    assert.equal(await rel.text(), 'signed download')
  })

  test('signed upload URLs (sbx.uploadUrl): multipart POST with plain fetch answers [{name, path, type}]', T, async () => {
    const { sbx } = await secure()
    const url = await sbx.uploadUrl('/home/user/cove-secure/up.txt', { useSignatureExpiration: 120 })
    const form = new FormData()
    form.append('file', new Blob(['uploaded with a signed url']), 'up.txt')
    const res = await fetch(url, { method: 'POST', body: form })
    assert.equal(res.status, 200)
    assert.deepEqual(await res.json(), [{ name: 'up.txt', path: '/home/user/cove-secure/up.txt', type: 'file' }])
    assert.equal(await sbx.files.read('/home/user/cove-secure/up.txt'), 'uploaded with a signed url')
    assert.equal((await sbx.files.getInfo('/home/user/cove-secure/up.txt')).owner, 'user')

    const rootUrl = await sbx.uploadUrl('cove-secure-up.txt', { user: 'root' })
    const rootForm = new FormData()
    rootForm.append('file', new Blob(['root upload']), 'ignored-name.txt')
    const rootRes = await fetch(rootUrl, { method: 'POST', body: rootForm })
    assert.equal(rootRes.status, 200)
    assert.deepEqual(await rootRes.json(), [{ name: 'cove-secure-up.txt', path: '/root/cove-secure-up.txt', type: 'file' }])
    assert.equal((await sbx.files.getInfo('/root/cove-secure-up.txt', { user: 'root' })).owner, 'root')
  })

  test('useSignatureExpiration: valid before expiry; expired → 401 "signature is already expired"', T, async () => {
    const { sbx, token } = await secure()
    const path = '/home/user/cove-secure/exp.txt'
    await sbx.files.write(path, 'expiring')

    const valid = await sbx.downloadUrl(path, { useSignatureExpiration: 60 })
    const exp = Number(new URL(valid).searchParams.get('signature_expiration'))
    assert.ok(Math.abs(exp - (Math.floor(Date.now() / 1000) + 60)) <= 2, `signature_expiration ${exp}`)
    assert.equal(new URL(valid).searchParams.get('signature'), sign(path, 'read', '', token, exp))
    const ok = await fetch(valid)
    assert.equal(ok.status, 200)
    assert.equal(await ok.text(), 'expiring')

    const expired = await sbx.downloadUrl(path, { useSignatureExpiration: -10 })
    await assertBody(await fetch(expired), 401, '{"code":401,"message":"signature is already expired"}\n')
    const expiredUpload = await sbx.uploadUrl(path, { useSignatureExpiration: -10 })
    const form = new FormData()
    form.append('file', new Blob(['must not land']), 'exp.txt')
    await assertBody(await fetch(expiredUpload, { method: 'POST', body: form }), 401, jsonError(401, 'signature is already expired'))
    assert.equal(await sbx.files.read(path), 'expiring')

    // Expiry is checked after the signature: a forged expiration is an invalid signature.
    const forged = new URL(expired)
    forged.searchParams.set('signature_expiration', String(exp + 3600))
    await assertBody(await fetch(forged), 401, jsonError(401, 'invalid signature'))
  })

  test('wrong signatures → 401 "invalid signature"', T, async () => {
    const { sbx, url, token } = await secure()
    const path = '/home/user/cove-secure/wrong.txt'
    await sbx.files.write(path, 'guarded')
    const cases = {
      'another path': sign('/home/user/cove-secure/other.txt', 'read', '', token),
      'the write op': sign(path, 'write', '', token),
      'another user': sign(path, 'read', 'root', token),
      'another token': sign(path, 'read', '', 'f'.repeat(64)),
      'padded base64': sign(path, 'read', '', token) + '=',
      garbage: 'v1_garbage',
    }
    for (const [what, signature] of Object.entries(cases)) {
      await assertBody(await fetch(filesUrl(url, { path, signature })), 401, jsonError(401, 'invalid signature'), what)
    }
    // A read signature does not authorise a write.
    const form = new FormData()
    form.append('file', new Blob(['overwrite']), 'wrong.txt')
    const write = await fetch(filesUrl(url, { path, signature: sign(path, 'read', '', token) }), { method: 'POST', body: form })
    await assertBody(write, 401, jsonError(401, 'invalid signature'))
    assert.equal(await sbx.files.read(path), 'guarded')
    // The same signature with username= given is a different signature (the raw query value is signed).
    const withUser = await fetch(filesUrl(url, { path, username: 'user', signature: sign(path, 'read', '', token) }))
    await assertBody(withUser, 401, jsonError(401, 'invalid signature'))
    const right = await fetch(filesUrl(url, { path, username: 'user', signature: sign(path, 'read', 'user', token) }))
    assert.equal(right.status, 200)
    assert.equal(await right.text(), 'guarded')
  })

  test('getSignature: the upstream fixed vector, and the documented formula', T, async () => {
    const fixed = await getSignature({ path: 'hello.txt', operation: 'read', user: 'user', envdAccessToken: '0tQG31xiMp0IOQfaz9dcwi72L1CPo8e0' })
    assert.deepEqual(fixed, { signature: 'v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E', expiration: null })
    assert.equal(sign('hello.txt', 'read', 'user', '0tQG31xiMp0IOQfaz9dcwi72L1CPo8e0'), fixed.signature)
    const { token } = secureAgent()
    const withExp = await getSignature({ path: 'a b/ü.txt', operation: 'write', envdAccessToken: token, expirationInSeconds: 30 })
    assert.equal(withExp.signature, sign('a b/ü.txt', 'write', '', token, withExp.expiration))
  })

  test('a sandbox without a token ignores signatures; the SDK refuses expiring URLs for it', T, async () => {
    const path = '/tmp/cove-unsigned.txt'
    const up = new FormData()
    up.append('file', new Blob(['open']), 'x')
    const w = await fetch(`${AGENT_URL}/files?path=${path}&signature=v1_garbage`, { method: 'POST', body: up })
    assert.equal(w.status, 200)
    const r = await fetch(`${AGENT_URL}/files?path=${path}&signature=v1_garbage&signature_expiration=1`)
    assert.equal(r.status, 200)
    assert.equal(await r.text(), 'open')
    const plain = new Sandbox({ sandboxId: 'cove-plain', envdVersion: '0.6.13', sandboxUrl: AGENT_URL, debug: true })
    assert.equal(await plain.downloadUrl(path), `${AGENT_URL}/files?path=${encodeURIComponent(path)}`)
    await assert.rejects(plain.downloadUrl(path, { useSignatureExpiration: 10 }), /Signature expiration can be used only when sandbox is created as secured/)
    // And the secure sandbox's SDK handle with the wrong token gets AuthenticationError.
    const { url } = secureAgent()
    const impostor = new Sandbox({ sandboxId: 'cove-impostor', envdAccessToken: 'a'.repeat(64), envdVersion: '0.6.13', sandboxUrl: url, debug: true })
    await assert.rejects(impostor.files.list('/'), AuthenticationError)
    await assert.rejects(impostor.files.read('/etc/hostname'), AuthenticationError)
  })
})
