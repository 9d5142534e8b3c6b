// Raw clients of the shim's TLS edge for tls*.test.mjs: what the SDK does not expose. HTTPS
// requests over HTTP/1.1 or HTTP/2 (chosen, not negotiated), the ALPN and certificate of a bare
// TLS connection, and a minimal WebSocket client (RFC 6455 over an HTTP/1.1 Upgrade). Only Node's
// own modules: certificates are trusted through NODE_EXTRA_CA_CERTS, like the SDK's.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import http2 from 'node:http2'
import https from 'node:https'
import tls from 'node:tls'

import { env } from './helpers.mjs'

/** The domain the clients use, with its port ("cove.localhost:8443"). */
export function domain() {
  return env('E2B_DOMAIN')
}

/** Whether the shim offers h2 in this phase (run.sh: COVE_E2E_HTTP2=1 or 0). */
export function shimOffersH2() {
  const v = env('COVE_E2E_HTTP2')
  assert.ok(v === '1' || v === '0', `COVE_E2E_HTTP2 must be 1 or 0, not ${JSON.stringify(v)}`)
  return v === '1'
}

/** The ALPN protocol the SDK's connections get in this phase. */
export function expectedAlpn() {
  return shimOffersH2() ? 'h2' : 'http/1.1'
}

/** Request protocols to repeat edge checks over: both when the shim speaks h2. */
export function protocols() {
  return shimOffersH2() ? ['http/1.1', 'h2'] : ['http/1.1']
}

/** A short label for test names: which phase this is. */
export function phaseLabel() {
  return shimOffersH2() ? '[h2 offered]' : '[http/1.1 only]'
}

export const apiHost = () => `api.${domain()}`
export const sharedHost = () => `sandbox.${domain()}`
export const portHost = (sandboxId, port) => `${port}-${sandboxId}.${domain()}`

/** "name:port" or "name" → {name, port}. */
export function splitHost(host) {
  const m = /^(.+?)(?::(\d+))?$/.exec(host)
  assert.ok(m, `not a host: ${host}`)
  return { name: m[1], port: m[2] ? Number(m[2]) : 443 }
}

/**
 * A bare TLS connection to `host` ("name:port") offering `alpn`; resolves with what was
 * negotiated and the peer certificate, after checking the chain and name like any client does.
 */
export function tlsProbe(host, alpn = ['h2', 'http/1.1'], timeoutMs = 10_000) {
  const { name, port } = splitHost(host)
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: name, port, servername: name, ALPNProtocols: alpn })
    const timer = setTimeout(() => socket.destroy(new Error(`TLS handshake with ${host} took over ${timeoutMs} ms`)), timeoutMs)
    socket.once('secureConnect', () => {
      clearTimeout(timer)
      const cert = socket.getPeerCertificate()
      const out = {
        alpn: socket.alpnProtocol,
        authorized: socket.authorized,
        authorizationError: socket.authorizationError,
        subjectaltname: cert?.subjectaltname ?? '',
        protocol: socket.getProtocol(),
      }
      socket.end()
      resolve(out)
    })
    socket.once('error', (e) => {
      clearTimeout(timer)
      reject(new Error(`TLS connection to ${host} (ALPN ${alpn.join(',')}): ${e.code ?? ''} ${e.message}`))
    })
  })
}

/**
 * One HTTPS request. `url` is https://host[:port]; `path` (raw, sent exactly as given: no
 * normalisation of "..", percent escapes kept) defaults to the URL's path and query.
 * Resolves {status, headers (lower-case names), body (utf-8 text), bytes (Buffer), alpn,
 * arrivals: [{ms, text}] for every piece of the body as it arrived, ms since the request began}.
 */
export function request(url, { method = 'GET', path, headers = {}, body, protocol = 'http/1.1', timeoutMs = 30_000 } = {}) {
  const u = new URL(url)
  const target = path ?? `${u.pathname}${u.search}`
  const what = `${method} https://${u.host}${target} over ${protocol}`
  const port = u.port ? Number(u.port) : 443
  const t0 = Date.now()
  const arrivals = []
  const arrived = (c) => arrivals.push({ ms: Date.now() - t0, text: c.toString('utf8') })
  if (protocol === 'h2') return h2Request(u, port, method, target, headers, body, timeoutMs, what, arrived, arrivals)
  assert.equal(protocol, 'http/1.1', `unknown protocol ${protocol}`)
  return new Promise((resolve, reject) => {
    const req = https.request({
      hostname: u.hostname,
      port,
      servername: u.hostname,
      path: target,
      method,
      headers,
      agent: false,
      ALPNProtocols: ['http/1.1'],
    })
    const timer = setTimeout(() => req.destroy(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs)
    req.on('response', (res) => {
      const chunks = []
      res.on('data', (c) => {
        chunks.push(c)
        arrived(c)
      })
      res.on('end', () => {
        clearTimeout(timer)
        const bytes = Buffer.concat(chunks)
        resolve({
          status: res.statusCode,
          headers: res.headers,
          body: bytes.toString('utf8'),
          bytes,
          alpn: res.socket?.alpnProtocol ?? req.socket?.alpnProtocol,
          arrivals,
        })
      })
      res.on('error', (e) => {
        clearTimeout(timer)
        reject(new Error(`${what}: reading the body: ${e.message}`))
      })
    })
    req.on('error', (e) => {
      clearTimeout(timer)
      reject(new Error(`${what}: ${e.code ?? ''} ${e.message}`))
    })
    req.end(body)
  })
}

/**
 * GET `url` and, as soon as the first piece of the body arrives, give up on it as a client that
 * goes away does: http/1.1 closes the connection; h2 cancels the stream (RST_STREAM CANCEL) and
 * keeps the connection open until finish(). Resolves {text (that first piece), finish()}.
 */
export function abortAfterFirstChunk(url, { protocol = 'http/1.1', timeoutMs = 15_000 } = {}) {
  const u = new URL(url)
  const port = u.port ? Number(u.port) : 443
  const what = `GET ${url} over ${protocol} (to be aborted)`
  return new Promise((resolve, reject) => {
    let timer
    if (protocol === 'h2') {
      const client = http2.connect(`https://${u.host}`, { servername: u.hostname, port })
      timer = setTimeout(() => client.destroy(new Error(`no body within ${timeoutMs} ms`)), timeoutMs)
      client.on('error', (e) => {
        clearTimeout(timer)
        reject(new Error(`${what}: ${e.message}`))
      })
      const req = client.request({ ':method': 'GET', ':path': `${u.pathname}${u.search}` })
      req.on('error', () => {}) // the cancel below
      req.once('data', (c) => {
        clearTimeout(timer)
        req.close(http2.constants.NGHTTP2_CANCEL)
        resolve({ text: c.toString('utf8'), finish: () => client.close() })
      })
      return
    }
    const req = https.request({
      hostname: u.hostname,
      port,
      servername: u.hostname,
      path: `${u.pathname}${u.search}`,
      agent: false,
      ALPNProtocols: ['http/1.1'],
    })
    timer = setTimeout(() => req.destroy(new Error(`no body within ${timeoutMs} ms`)), timeoutMs)
    req.on('error', (e) => {
      clearTimeout(timer)
      reject(new Error(`${what}: ${e.message}`))
    })
    req.on('response', (res) => {
      res.on('error', () => {}) // the destroy below
      res.once('data', (c) => {
        clearTimeout(timer)
        req.destroy()
        resolve({ text: c.toString('utf8'), finish: () => {} })
      })
    })
    req.end()
  })
}

function h2Request(u, port, method, target, headers, body, timeoutMs, what, arrived, arrivals) {
  return new Promise((resolve, reject) => {
    const client = http2.connect(`https://${u.host}`, { servername: u.hostname, port })
    let alpn
    const timer = setTimeout(() => client.destroy(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs)
    const fail = (e) => {
      clearTimeout(timer)
      client.destroy()
      reject(new Error(`${what}: ${e.code ?? ''} ${e.message}`))
    }
    client.on('error', fail)
    client.on('connect', () => {
      alpn = client.alpnProtocol
    })
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
    const req = client.request({ ':method': method, ':path': target, ...lower }, { endStream: body === undefined })
    let status
    let resHeaders = {}
    const chunks = []
    req.on('response', (h) => {
      status = h[':status']
      resHeaders = Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith(':')))
    })
    req.on('data', (c) => {
      chunks.push(c)
      arrived(c)
    })
    req.on('end', () => {
      clearTimeout(timer)
      const bytes = Buffer.concat(chunks)
      const out = { status, headers: resHeaders, body: bytes.toString('utf8'), bytes, alpn: alpn ?? client.alpnProtocol, arrivals }
      client.close()
      if (status === undefined) reject(new Error(`${what}: the stream ended without a response`))
      else resolve(out)
    })
    req.on('error', fail)
    if (body !== undefined) req.end(body)
  })
}

/** JSON.parse with the text in the failure message. */
export function parseJson(text, what) {
  try {
    return JSON.parse(text)
  } catch {
    assert.fail(`${what}: not JSON: ${JSON.stringify(text.slice(0, 300))}`)
  }
}

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

/**
 * Opens a WebSocket to wss://host/path through an HTTP/1.1 Upgrade. Resolves a connection with
 * send(text|Buffer), ping(Buffer), next() (the next message: {opcode, data: Buffer}; pongs and
 * closes are messages too) and close(). A non-101 answer rejects with {status, headers, body}
 * in `err.response`.
 */
export function wsConnect(host, path = '/', { headers = {}, timeoutMs = 15_000 } = {}) {
  const { name, port } = splitHost(host)
  const key = randomBytes(16).toString('base64')
  const what = `WebSocket wss://${host}${path}`
  return new Promise((resolve, reject) => {
    const req = https.request({
      hostname: name,
      port,
      servername: name,
      path,
      agent: false,
      ALPNProtocols: ['http/1.1'],
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': key,
        ...headers,
      },
    })
    const timer = setTimeout(() => req.destroy(new Error(`no handshake answer within ${timeoutMs} ms`)), timeoutMs)
    req.on('upgrade', (res, socket, head) => {
      clearTimeout(timer)
      const accept = createHash('sha1').update(key + WS_GUID).digest('base64')
      if (res.statusCode !== 101 || res.headers['sec-websocket-accept'] !== accept) {
        socket.destroy()
        reject(new Error(`${what}: bad handshake: ${res.statusCode} ${JSON.stringify(res.headers)}`))
        return
      }
      resolve(new WsConnection(socket, head))
    })
    req.on('response', (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => {
        clearTimeout(timer)
        const err = new Error(`${what}: answered ${res.statusCode} instead of 101`)
        err.response = { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }
        reject(err)
      })
    })
    req.on('error', (e) => {
      clearTimeout(timer)
      reject(new Error(`${what}: ${e.code ?? ''} ${e.message}`))
    })
    req.end()
  })
}

class WsConnection {
  constructor(socket, head) {
    this.socket = socket
    this.buffer = Buffer.from(head ?? [])
    this.messages = []
    this.waiters = []
    this.ended = null
    socket.on('data', (d) => {
      this.buffer = Buffer.concat([this.buffer, d])
      this.#parse()
    })
    socket.on('end', () => this.#end('the server closed the connection'))
    socket.on('error', (e) => this.#end(e.message))
    socket.on('close', () => this.#end('closed'))
    // Bytes that arrived with the 101 answer.
    if (this.buffer.length) queueMicrotask(() => this.#parse())
  }

  #end(why) {
    this.ended ??= why
    for (const w of this.waiters.splice(0)) w.reject(new Error(`WebSocket ended: ${this.ended}`))
  }

  #parse() {
    for (;;) {
      const b = this.buffer
      if (b.length < 2) return
      const opcode = b[0] & 0x0f
      // The echo server never fragments, and servers never mask (RFC 6455 §5.1).
      if ((b[0] & 0x80) === 0 || (b[1] & 0x80) !== 0) {
        this.#end(`unexpected frame header ${b.subarray(0, 2).toString('hex')}`)
        this.socket.destroy()
        return
      }
      let len = b[1] & 0x7f
      let off = 2
      if (len === 126) {
        if (b.length < 4) return
        len = b.readUInt16BE(2)
        off = 4
      } else if (len === 127) {
        if (b.length < 10) return
        len = Number(b.readBigUInt64BE(2))
        off = 10
      }
      if (b.length < off + len) return
      const msg = { opcode, data: b.subarray(off, off + len) }
      this.buffer = b.subarray(off + len)
      const w = this.waiters.shift()
      if (w) w.resolve(msg)
      else this.messages.push(msg)
    }
  }

  #frame(opcode, payload) {
    const data = Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'utf8')
    const mask = randomBytes(4)
    let head
    if (data.length < 126) {
      head = Buffer.from([0x80 | opcode, 0x80 | data.length])
    } else if (data.length < 65536) {
      head = Buffer.alloc(4)
      head[0] = 0x80 | opcode
      head[1] = 0x80 | 126
      head.writeUInt16BE(data.length, 2)
    } else {
      head = Buffer.alloc(10)
      head[0] = 0x80 | opcode
      head[1] = 0x80 | 127
      head.writeBigUInt64BE(BigInt(data.length), 2)
    }
    const masked = Buffer.alloc(data.length)
    for (let i = 0; i < data.length; i++) masked[i] = data[i] ^ mask[i & 3]
    this.socket.write(Buffer.concat([head, mask, masked]))
  }

  send(payload) {
    this.#frame(Buffer.isBuffer(payload) ? 2 : 1, payload)
  }

  ping(payload = Buffer.alloc(0)) {
    this.#frame(9, payload)
  }

  /** The next message from the server, within timeoutMs. */
  next(timeoutMs = 10_000) {
    if (this.messages.length) return Promise.resolve(this.messages.shift())
    if (this.ended) return Promise.reject(new Error(`WebSocket ended: ${this.ended}`))
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done)
        reject(new Error(`no WebSocket message within ${timeoutMs} ms`))
      }, timeoutMs)
      const done = (m) => {
        clearTimeout(timer)
        resolve(m)
      }
      this.waiters.push({
        resolve: done,
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      })
    })
  }

  /** Close handshake: sends close 1000 and waits for the server's close frame. */
  async close() {
    const code = Buffer.alloc(2)
    code.writeUInt16BE(1000)
    this.#frame(8, code)
    try {
      return await this.next()
    } finally {
      this.socket.destroy()
    }
  }

  destroy() {
    this.socket.destroy()
  }
}
