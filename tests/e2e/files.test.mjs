// files.read / files.write through the e2b SDK (HTTP GET/POST /files): every data format, empty and
// 200 MiB files with the agent's memory watched, paths per user, multi-file writes, gzip both ways,
// raw octet-stream uploads, xattr metadata, and a full filesystem. Contents are checked inside the
// sandbox with commands (sha256sum, stat) as well, so a read bug cannot hide a write bug.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { describe, test } from 'node:test'
import { gunzipSync, gzipSync } from 'node:zlib'

import { AuthenticationError, FileNotFoundError, InvalidArgumentError, NotEnoughSpaceError } from 'e2b'
import { AGENT_URL, TEST_TIMEOUT, createSandbox, lazy, pollUntil, sampleAgentRss, sh } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }
const sandbox = lazy(createSandbox)
const MiB = 1024 * 1024
const RSS_BUDGET_KIB = 16 * 1024

const sha256 = (data) => createHash('sha256').update(data).digest('hex')

async function streamToBuffer(stream) {
  const chunks = []
  for await (const chunk of stream) chunks.push(Buffer.from(chunk))
  return Buffer.concat(chunks)
}

/** sha256sum and size of a file inside the sandbox. */
async function remoteDigest(sbx, path, user = 'root') {
  const out = await sh(sbx, `sha256sum -- '${path}' | cut -d' ' -f1; stat -c %s -- '${path}'`, { user })
  const [hash, size] = out.split('\n')
  return { hash, size: Number(size) }
}

/** A plain HTTP/1.1 request that leaves Content-Encoding alone (fetch would decode gzip). */
function raw(method, path, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = request(`${AGENT_URL}${path}`, { method, headers }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('files', () => {
  test('write returns {name, type, path}; read back as text, bytes, blob and stream', T, async () => {
    const sbx = await sandbox()
    const text = 'héllo wörld ✓\nsecond line\n'
    const info = await sbx.files.write('/home/user/cove-files/formats.txt', text)
    assert.equal(info.name, 'formats.txt')
    assert.equal(info.type, 'file')
    assert.equal(info.path, '/home/user/cove-files/formats.txt')
    assert.equal((await remoteDigest(sbx, info.path)).hash, sha256(text))

    assert.equal(await sbx.files.read(info.path), text)
    assert.equal(await sbx.files.read(info.path, { format: 'text' }), text)
    const bytes = await sbx.files.read(info.path, { format: 'bytes' })
    assert.ok(bytes instanceof Uint8Array)
    assert.deepEqual(Buffer.from(bytes), Buffer.from(text))
    const blob = await sbx.files.read(info.path, { format: 'blob' })
    assert.ok(blob instanceof Blob)
    assert.equal(await blob.text(), text)
    const stream = await sbx.files.read(info.path, { format: 'stream' })
    assert.deepEqual(await streamToBuffer(stream), Buffer.from(text))
  })

  test('write accepts bytes, ArrayBuffer, Blob and ReadableStream data', T, async () => {
    const sbx = await sandbox()
    const all = Uint8Array.from({ length: 512 }, (_, i) => i % 256) // every byte value, twice
    const cases = [
      ['bytes.bin', all],
      ['arraybuffer.bin', all.buffer.slice(0)],
      ['blob.bin', new Blob([all.subarray(0, 100), all.subarray(100)])],
      ['stream.bin', new ReadableStream({ start(c) { c.enqueue(all.subarray(0, 7)); c.enqueue(all.subarray(7)); c.close() } })],
    ]
    for (const [name, data] of cases) {
      const path = `/home/user/cove-files/${name}`
      const info = await sbx.files.write(path, data)
      assert.equal(info.path, path, name)
      assert.deepEqual(await remoteDigest(sbx, path), { hash: sha256(all), size: all.length }, name)
      assert.deepEqual(Buffer.from(await sbx.files.read(path, { format: 'bytes' })), Buffer.from(all), name)
    }
  })

  test('an empty file: written from a string and a stream, read back empty in every format', T, async () => {
    const sbx = await sandbox()
    const path = '/home/user/cove-files/empty.txt'
    await sh(sbx, `mkdir -p /home/user/cove-files && printf nonempty > ${path}`)
    const info = await sbx.files.write(path, '')
    assert.equal(info.path, path)
    assert.equal(await sh(sbx, `stat -c %s ${path}`), '0')
    assert.equal(await sbx.files.read(path), '')
    assert.equal((await sbx.files.read(path, { format: 'bytes' })).length, 0)
    assert.equal((await sbx.files.read(path, { format: 'blob' })).size, 0)
    assert.equal((await streamToBuffer(await sbx.files.read(path, { format: 'stream' }))).length, 0)

    const streamed = '/home/user/cove-files/empty-stream.txt'
    await sbx.files.write(streamed, new ReadableStream({ start(c) { c.close() } }))
    assert.equal(await sh(sbx, `stat -c %s ${streamed}`), '0')
  })

  test('a 200 MiB stream upload: SHA-256 equal, agent RSS grows < 16 MiB', T, async (t) => {
    const sbx = await sandbox()
    const path = '/home/user/cove-big-up.bin'
    const chunks = 200
    const block = randomBytes(MiB)
    const hash = createHash('sha256')
    let i = 0
    const body = new ReadableStream({
      pull(c) {
        if (i === chunks) return c.close()
        const chunk = Buffer.from(block)
        chunk.writeUInt32BE(i++, 0) // every MiB differs
        hash.update(chunk)
        c.enqueue(chunk)
      },
    })
    const rss = sampleAgentRss()
    const t0 = performance.now()
    let sample
    try {
      const info = await sbx.files.write(path, body)
      assert.equal(info.path, path)
    } finally {
      sample = rss.stop()
    }
    const growth = sample.peak - sample.before
    t.diagnostic(`200 MiB upload in ${((performance.now() - t0) / 1000).toFixed(2)} s, agent RSS ${sample.before} → ${sample.peak} KiB`)
    assert.ok(growth < RSS_BUDGET_KIB, `agent RSS grew by ${growth} KiB (${sample.before} → ${sample.peak}) during the upload`)
    assert.deepEqual(await remoteDigest(sbx, path), { hash: hash.digest('hex'), size: chunks * MiB })
    await sh(sbx, `rm -f ${path}`)
  })

  test('a 200 MiB stream download: SHA-256 equal, agent RSS grows < 16 MiB', T, async (t) => {
    const sbx = await sandbox()
    const path = '/home/user/cove-big-down.bin'
    await sh(sbx, `head -c ${200 * MiB} /dev/urandom > ${path}`)
    const expected = await remoteDigest(sbx, path)
    assert.equal(expected.size, 200 * MiB)

    const rss = sampleAgentRss()
    const t0 = performance.now()
    const hash = createHash('sha256')
    let size = 0
    let sample
    try {
      const stream = await sbx.files.read(path, { format: 'stream' })
      for await (const chunk of stream) {
        hash.update(chunk)
        size += chunk.length
      }
    } finally {
      sample = rss.stop()
    }
    const growth = sample.peak - sample.before
    t.diagnostic(`200 MiB download in ${((performance.now() - t0) / 1000).toFixed(2)} s, agent RSS ${sample.before} → ${sample.peak} KiB`)
    assert.ok(growth < RSS_BUDGET_KIB, `agent RSS grew by ${growth} KiB (${sample.before} → ${sample.peak}) during the download`)
    assert.equal(size, expected.size)
    assert.equal(hash.digest('hex'), expected.hash)
    await sh(sbx, `rm -f ${path}`)
  })

  test('a 64 MiB multipart upload (Blob data): SHA-256 equal, agent RSS grows < 16 MiB', T, async () => {
    const sbx = await sandbox()
    const path = '/home/user/cove-big-multipart.bin'
    const data = randomBytes(64 * MiB)
    const rss = sampleAgentRss()
    let sample
    try {
      const info = await sbx.files.write(path, new Blob([data]))
      assert.equal(info.path, path)
    } finally {
      sample = rss.stop()
    }
    const growth = sample.peak - sample.before
    assert.ok(growth < RSS_BUDGET_KIB, `agent RSS grew by ${growth} KiB (${sample.before} → ${sample.peak}) during the upload`)
    assert.deepEqual(await remoteDigest(sbx, path), { hash: sha256(data), size: data.length })
    await sh(sbx, `rm -f ${path}`)
  })

  test('an upload aborted midway leaves no stray files and the agent serving', T, async () => {
    const sbx = await sandbox()
    const dir = '/home/user/cove-abort'
    await sh(sbx, `rm -rf ${dir} && mkdir -p ${dir}`)
    const ac = new AbortController()
    let sent = 0
    const body = new ReadableStream({
      async pull(c) {
        if (sent === 8) {
          ac.abort() // after 8 MiB, mid-body
          await new Promise((r) => setTimeout(r, 50))
          return c.error(new Error('aborted by the test'))
        }
        sent++
        c.enqueue(randomBytes(MiB))
      },
    })
    await assert.rejects(sbx.files.write(`${dir}/partial.bin`, body, { signal: ac.signal }))
    // Whatever the agent keeps of the partial upload, it is under the target name only.
    await pollUntil(
      () => sh(sbx, `ls -A ${dir}`),
      (out) => out === '' || out === 'partial.bin',
      { timeoutMs: 5_000, what: `only partial.bin (or nothing) in ${dir}` },
    )
    assert.equal((await fetch(`${AGENT_URL}/health`)).status, 204)
    await sbx.files.write(`${dir}/partial.bin`, 'complete')
    assert.equal(await sbx.files.read(`${dir}/partial.bin`), 'complete')
    assert.equal(await sh(sbx, `ls -A ${dir}`), 'partial.bin')
  })

  test('non-ASCII and spaced names in multi-file writes and downloads', T, async () => {
    const sbx = await sandbox()
    const dir = '/home/user/cove-ünï cödé'
    const infos = await sbx.files.write([
      { path: `${dir}/日本語 ✓.txt`, data: 'unicode' },
      { path: `${dir}/with space.txt`, data: 'space' },
    ])
    assert.deepEqual(infos.map((f) => [f.name, f.path]), [
      ['日本語 ✓.txt', `${dir}/日本語 ✓.txt`],
      ['with space.txt', `${dir}/with space.txt`],
    ])
    assert.equal(await sh(sbx, `cat '${dir}/日本語 ✓.txt' '${dir}/with space.txt'`), 'unicodespace')
    assert.equal(await sbx.files.read(`${dir}/日本語 ✓.txt`), 'unicode')
    const res = await raw('GET', `/files?path=${encodeURIComponent(`${dir}/日本語 ✓.txt`)}`)
    assert.equal(res.status, 200)
    assert.equal(res.headers['content-disposition'], "inline; filename*=utf-8''%E6%97%A5%E6%9C%AC%E8%AA%9E%20%E2%9C%93.txt")
    assert.deepEqual((await sbx.files.list(dir)).map((e) => e.name).sort(), ['with space.txt', '日本語 ✓.txt'])
  })

  test('GET /files as http.ServeContent: type by extension, disposition, ranges, conditional requests', T, async () => {
    const sbx = await sandbox()
    const path = '/home/user/cove-files/range.txt'
    await sh(sbx, `mkdir -p /home/user/cove-files && printf 0123456789 > ${path}`)
    const q = `/files?path=${encodeURIComponent(path)}`
    const full = await raw('GET', q)
    assert.equal(full.status, 200)
    assert.equal(full.headers['content-type'], 'text/plain; charset=utf-8')
    assert.equal(full.headers['content-disposition'], 'inline; filename=range.txt')
    assert.equal(full.headers['accept-ranges'], 'bytes')
    assert.equal(full.headers['content-length'], '10')
    assert.ok(full.headers['last-modified'], 'no Last-Modified')

    const part = await raw('GET', q, { headers: { range: 'bytes=2-5' } })
    assert.equal(part.status, 206)
    assert.equal(part.headers['content-range'], 'bytes 2-5/10')
    assert.equal(part.body.toString(), '2345')
    const tail = await raw('GET', q, { headers: { range: 'bytes=-3', 'accept-encoding': 'gzip' } })
    assert.equal(tail.status, 206)
    assert.equal(tail.headers['content-encoding'], undefined) // ranges are served as identity
    assert.equal(tail.body.toString(), '789')
    const beyond = await raw('GET', q, { headers: { range: 'bytes=100-' } })
    assert.equal(beyond.status, 416)
    const cached = await raw('GET', q, { headers: { 'if-modified-since': full.headers['last-modified'] } })
    assert.equal(cached.status, 304)
    assert.equal(cached.body.length, 0)
  })

  test('relative paths resolve to /home/user; user root writes under /root, owned by root', T, async () => {
    const sbx = await sandbox()
    assert.equal((await sbx.files.write('~/cove-tilde.txt', 'tilde')).path, '/home/user/cove-tilde.txt')
    assert.equal((await sbx.files.write('cove-rel/../cove-dotdot.txt', 'dotdot')).path, '/home/user/cove-dotdot.txt')
    assert.equal(await sh(sbx, 'cat /home/user/cove-tilde.txt /home/user/cove-dotdot.txt'), 'tildedotdot')
    await assert.rejects(sbx.files.read('~root/.bashrc'), (e) => {
      assert.ok(e instanceof InvalidArgumentError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /cannot expand user-specific home dir/)
      return true
    })
    const rel = await sbx.files.write('cove-rel/dir/r.txt', 'relative')
    assert.equal(rel.path, '/home/user/cove-rel/dir/r.txt')
    assert.equal(rel.name, 'r.txt')
    assert.equal(await sh(sbx, 'cat /home/user/cove-rel/dir/r.txt'), 'relative')
    // The file and the directories created for it belong to the default user.
    assert.equal(
      await sh(sbx, 'stat -c %U:%G /home/user/cove-rel /home/user/cove-rel/dir /home/user/cove-rel/dir/r.txt'),
      'user:user\nuser:user\nuser:user',
    )
    assert.equal(await sbx.files.read('cove-rel/dir/r.txt'), 'relative')

    const root = await sbx.files.write('cove-root/r.txt', 'as root', { user: 'root' })
    assert.equal(root.path, '/root/cove-root/r.txt')
    assert.equal(await sh(sbx, 'stat -c %U:%G /root/cove-root /root/cove-root/r.txt', { user: 'root' }), 'root:root\nroot:root')
    assert.equal(await sbx.files.read('cove-root/r.txt', { user: 'root' }), 'as root')
    const info = await sbx.files.getInfo('/root/cove-root/r.txt', { user: 'root' })
    assert.equal(info.owner, 'root')
    assert.equal(info.group, 'root')
    const mine = await sbx.files.getInfo('/home/user/cove-rel/dir/r.txt')
    assert.equal(mine.owner, 'user')
    assert.equal(mine.group, 'user')

    // Overwriting a root-owned file as the default user hands it over (envd chowns before truncating).
    await sh(sbx, 'install -m 0644 -o root -g root /dev/null /home/user/cove-rel/owned.txt', { user: 'root' })
    await sbx.files.write('/home/user/cove-rel/owned.txt', 'mine now')
    assert.equal(await sh(sbx, 'stat -c %U:%G:%a /home/user/cove-rel/owned.txt'), 'user:user:644')
  })

  test('an unknown user is refused with AuthenticationError', T, async () => {
    const sbx = await sandbox()
    await assert.rejects(sbx.files.write('/tmp/nobody.txt', 'x', { user: 'cove-no-such-user' }), (e) => {
      assert.ok(e instanceof AuthenticationError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /cove-no-such-user/)
      return true
    })
    await assert.rejects(sbx.files.read('/etc/hostname', { user: 'cove-no-such-user' }), AuthenticationError)
    assert.equal(await sh(sbx, 'test -e /tmp/nobody.txt && echo exists || echo absent'), 'absent')
  })

  test('multi-file write: one request, infos in order, relative and absolute targets', T, async () => {
    const sbx = await sandbox()
    const bin = randomBytes(4096)
    const infos = await sbx.files.write([
      { path: 'cove-multi/a.txt', data: 'file A' },
      { path: '/tmp/cove-multi/b.bin', data: bin },
      { path: '/home/user/cove-multi/sub/c.txt', data: new Blob(['file C']) },
    ])
    assert.ok(Array.isArray(infos))
    assert.deepEqual(
      infos.map((f) => [f.name, f.type, f.path]),
      [
        ['a.txt', 'file', '/home/user/cove-multi/a.txt'],
        ['b.bin', 'file', '/tmp/cove-multi/b.bin'],
        ['c.txt', 'file', '/home/user/cove-multi/sub/c.txt'],
      ],
    )
    assert.equal(await sh(sbx, 'cat /home/user/cove-multi/a.txt /home/user/cove-multi/sub/c.txt'), 'file Afile C')
    assert.equal((await remoteDigest(sbx, '/tmp/cove-multi/b.bin')).hash, sha256(bin))
    // writeFiles is the same call.
    const again = await sbx.files.writeFiles([{ path: 'cove-multi/a.txt', data: 'A2' }])
    assert.deepEqual(again.map((f) => f.path), ['/home/user/cove-multi/a.txt'])
    assert.equal(await sh(sbx, 'cat /home/user/cove-multi/a.txt'), 'A2')
  })

  test('two parts for the same path: 400, the first one is written', T, async () => {
    const sbx = await sandbox()
    await assert.rejects(
      sbx.files.write([
        { path: '/tmp/cove-dup.txt', data: 'first' },
        { path: '/tmp/cove-dup.txt', data: 'second' },
      ]),
      (e) => {
        assert.ok(e instanceof InvalidArgumentError, `${e?.name}: ${e?.message}`)
        assert.match(e.message, /you cannot upload multiple files to the same path '\/tmp\/cove-dup.txt' in one upload request/)
        return true
      },
    )
    assert.equal(await sh(sbx, 'cat /tmp/cove-dup.txt'), 'first')
  })

  test('gzip upload: {gzip: true} sends a gzip body that lands decompressed', T, async () => {
    const sbx = await sandbox()
    const text = 'compress me please\n'.repeat(50_000) // ~1 MiB, very compressible
    const info = await sbx.files.write('/home/user/cove-files/gz-up.txt', text, { gzip: true })
    assert.equal(info.path, '/home/user/cove-files/gz-up.txt')
    assert.deepEqual(await remoteDigest(sbx, info.path), { hash: sha256(text), size: Buffer.byteLength(text) })

    // The same on the wire without the SDK, and an encoding envd does not support.
    const gz = gzipSync(Buffer.from('raw gzip body'))
    const ok = await raw('POST', '/files?path=/tmp/cove-gz-raw.txt', {
      headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', 'content-length': gz.length },
      body: gz,
    })
    assert.equal(ok.status, 200, ok.body.toString())
    assert.equal(await sh(sbx, 'cat /tmp/cove-gz-raw.txt'), 'raw gzip body')
    const br = await raw('POST', '/files?path=/tmp/cove-br.txt', {
      headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'br' },
      body: 'x',
    })
    assert.equal(br.status, 400)
    assert.match(br.body.toString(), /unsupported Content-Encoding: br, supported: \[gzip\]/)
    const bad = await raw('POST', '/files?path=/tmp/cove-badgz.txt', {
      headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' },
      body: 'not gzip at all',
    })
    assert.equal(bad.status, 400, bad.body.toString())
  })

  test('gzip download: {gzip: true} reads the same bytes; the wire carries Content-Encoding gzip', T, async () => {
    const sbx = await sandbox()
    const path = '/home/user/cove-files/gz-down.txt'
    const text = 'download compressed\n'.repeat(50_000)
    await sbx.files.write(path, text)
    assert.equal(await sbx.files.read(path, { gzip: true }), text)
    assert.deepEqual(Buffer.from(await sbx.files.read(path, { format: 'bytes', gzip: true })), Buffer.from(text))

    const gz = await raw('GET', `/files?path=${encodeURIComponent(path)}`, { headers: { 'accept-encoding': 'gzip' } })
    assert.equal(gz.status, 200)
    assert.equal(gz.headers['content-encoding'], 'gzip')
    assert.match(gz.headers.vary ?? '', /Accept-Encoding/i)
    assert.ok(gz.body.length < Buffer.byteLength(text) / 10, `gzip body of ${gz.body.length} bytes`)
    assert.equal(gunzipSync(gz.body).toString(), text)

    const plain = await raw('GET', `/files?path=${encodeURIComponent(path)}`, { headers: { 'accept-encoding': 'identity' } })
    assert.equal(plain.status, 200)
    assert.equal(plain.headers['content-encoding'], undefined)
    assert.equal(plain.headers['content-length'], String(Buffer.byteLength(text)))
    assert.equal(plain.body.toString(), text)
  })

  test('useOctetStream: one raw body per file, same result; raw bodies need ?path=', T, async () => {
    const sbx = await sandbox()
    const data = randomBytes(100_000)
    const info = await sbx.files.write('cove-files/octet.bin', data, { useOctetStream: true })
    assert.deepEqual([info.name, info.type, info.path], ['octet.bin', 'file', '/home/user/cove-files/octet.bin'])
    assert.equal((await remoteDigest(sbx, info.path)).hash, sha256(data))
    assert.equal(await sh(sbx, `stat -c %U ${info.path}`), 'user')

    const many = await sbx.files.write(
      [
        { path: '/tmp/cove-octet-1.txt', data: 'one' },
        { path: '/tmp/cove-octet-2.txt', data: 'two' },
      ],
      { useOctetStream: true },
    )
    assert.deepEqual(many.map((f) => f.path), ['/tmp/cove-octet-1.txt', '/tmp/cove-octet-2.txt'])
    assert.equal(await sh(sbx, 'cat /tmp/cove-octet-1.txt /tmp/cove-octet-2.txt'), 'onetwo')

    const noPath = await raw('POST', '/files', { headers: { 'content-type': 'application/octet-stream' }, body: 'x' })
    assert.equal(noPath.status, 400)
    assert.deepEqual(JSON.parse(noPath.body), { code: 400, message: 'path query parameter is required for raw body upload' })
    const wrongType = await raw('POST', '/files?path=/tmp/x.txt', { headers: { 'content-type': 'text/plain' }, body: 'x' })
    assert.equal(wrongType.status, 400)
    assert.deepEqual(JSON.parse(wrongType.body), {
      code: 400,
      message: 'unsupported content type: text/plain, expected multipart/form-data or application/octet-stream',
    })
  })

  test('metadata round-trips through write, getInfo and list, keys lowercased; a rewrite replaces it', T, async () => {
    const sbx = await sandbox()
    const dir = '/home/user/cove-meta'
    const path = `${dir}/m.txt`
    const metadata = { Author: 'Cove Tests', 'Mixed-Case_Key': 'value with spaces ~!', n: '1' }
    const expected = { author: 'Cove Tests', 'mixed-case_key': 'value with spaces ~!', n: '1' }
    const info = await sbx.files.write(path, 'meta', { metadata })
    assert.deepEqual(info.metadata, expected)
    assert.deepEqual((await sbx.files.getInfo(path)).metadata, expected)
    const listed = (await sbx.files.list(dir)).find((e) => e.name === 'm.txt')
    assert.ok(listed, 'm.txt missing from list')
    assert.deepEqual(listed.metadata, expected)
    // Stored as the xattr user.e2b.<lowercased key>, as envd does.
    const xattrs = await sh(sbx, `python3 -c "import os; print(sorted((k, os.getxattr('${path}', k).decode()) for k in os.listxattr('${path}')))"`)
    assert.equal(xattrs, "[('user.e2b.author', 'Cove Tests'), ('user.e2b.mixed-case_key', 'value with spaces ~!'), ('user.e2b.n', '1')]")

    // Octet-stream uploads carry metadata too; every upload replaces the whole set.
    const octet = await sbx.files.write(path, 'meta2', { metadata: { Only: 'this' }, useOctetStream: true })
    assert.deepEqual(octet.metadata, { only: 'this' })
    assert.deepEqual((await sbx.files.getInfo(path)).metadata, { only: 'this' })
    await sbx.files.write(path, 'meta3')
    assert.equal((await sbx.files.getInfo(path)).metadata, undefined)
    assert.equal(await sbx.files.read(path), 'meta3')
  })

  test('missing files are FileNotFoundError; a directory is InvalidArgumentError both ways', T, async () => {
    const sbx = await sandbox()
    await assert.rejects(sbx.files.read('/home/user/cove-no-such-file'), (e) => {
      assert.ok(e instanceof FileNotFoundError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /path '\/home\/user\/cove-no-such-file' does not exist/)
      return true
    })
    await assert.rejects(sbx.files.read('/home/user'), (e) => {
      assert.ok(e instanceof InvalidArgumentError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /path '\/home\/user' is a directory/)
      return true
    })
    await sh(sbx, 'mkdir -p /home/user/cove-isdir')
    await assert.rejects(sbx.files.write('/home/user/cove-isdir', 'x'), (e) => {
      assert.ok(e instanceof InvalidArgumentError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /path is a directory: \/home\/user\/cove-isdir/)
      return true
    })
    assert.equal(await sh(sbx, 'test -d /home/user/cove-isdir && echo dir'), 'dir')
    await sh(sbx, 'touch /home/user/cove-notadir')
    await assert.rejects(sbx.files.write('/home/user/cove-notadir/child.txt', 'x'), (e) => {
      assert.match(e.message, /path is a file: \/home\/user\/cove-notadir/)
      return true
    })
  })

  test('a full filesystem: NotEnoughSpaceError; the earlier file, even when overwritten, intact', T, async () => {
    const sbx = await sandbox()
    // sandbox.sh mounts a 2 MiB tmpfs here (COVE_SANDBOX_SMALL_TMPFS).
    const fs = await sh(sbx, 'stat -f -c "%T %b %S" /mnt/small')
    const [type, blocks, bsize] = fs.split(' ')
    assert.equal(type, 'tmpfs')
    assert.ok(Number(blocks) * Number(bsize) <= 2 * MiB, `/mnt/small is ${fs}`)

    const keep = randomBytes(256 * 1024)
    await sbx.files.write('/mnt/small/keep.bin', keep)
    const tooBig = randomBytes(3 * MiB)
    for (const [mode, opts] of [['multipart', {}], ['octet-stream', { useOctetStream: true }]]) {
      // A new file, then the existing one: a failed write leaves the previous content in place.
      for (const target of ['/mnt/small/big.bin', '/mnt/small/keep.bin']) {
        const what = `${mode} to ${target}`
        await assert.rejects(sbx.files.write(target, tooBig, opts), (e) => {
          assert.ok(e instanceof NotEnoughSpaceError, `${what}: ${e?.name}: ${e?.message}`)
          assert.match(e.message, /not enough disk space available/, what)
          return true
        })
        assert.deepEqual(await remoteDigest(sbx, '/mnt/small/keep.bin'), { hash: sha256(keep), size: keep.length }, what)
        assert.deepEqual(Buffer.from(await sbx.files.read('/mnt/small/keep.bin', { format: 'bytes' })), keep, what)
        // The agent still serves, and the space comes back once any partial file is gone.
        await sh(sbx, 'rm -f /mnt/small/big.bin')
        const small = await sbx.files.write('/mnt/small/after.txt', `after ${what}`)
        assert.equal(small.path, '/mnt/small/after.txt')
        assert.equal(await sh(sbx, 'cat /mnt/small/after.txt'), `after ${what}`)
      }
    }
  })
})
