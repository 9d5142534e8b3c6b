// Servers the TLS edge tests start inside a sandbox, as a user would: `python3 -m http.server`
// and ws_echo.py (uploaded with files.write), each a background command, each waited for from
// inside the sandbox before any request goes through the edge.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'

import { pollUntil, shStatus } from './helpers.mjs'

const ECHO_SOURCE = new URL('./ws_echo.py', import.meta.url)
const ECHO_PATH = '/home/user/ws_echo.py'

/** URL of `port` on `bind` from inside the sandbox, for curl. */
function insideUrl(bind, port, path) {
  const host = bind.includes(':') ? `[${bind}]` : bind === '0.0.0.0' ? '127.0.0.1' : bind
  return `http://${host}:${port}${path}`
}

/** Waits (≤ 20 s) until `path` on `port` answers inside the sandbox. */
async function waitListening(sbx, bind, port, path, handle) {
  const url = insideUrl(bind, port, path)
  await pollUntil(
    () => shStatus(sbx, `curl -sg -o /dev/null -w '%{http_code}' --max-time 2 '${url}'`),
    (r) => r.exitCode === 0 && r.stdout !== '000',
    { timeoutMs: 20_000, intervalMs: 250, what: `a server on ${url} inside the sandbox` },
  ).catch((e) => {
    assert.fail(`${e.message}; the server's output: ${JSON.stringify((handle.stdout + handle.stderr).slice(-500))}`)
  })
}

/**
 * `python3 -m http.server <port> [--bind <bind>]` serving `dir`, in the background; resolves
 * the command handle once it answers.
 */
export async function startHttpServer(sbx, port, { bind, dir = '/home/user' } = {}) {
  const cmd = `python3 -m http.server ${port}${bind ? ` --bind ${bind}` : ''}`
  const handle = await sbx.commands.run(cmd, { background: true, cwd: dir, timeoutMs: 0 })
  await waitListening(sbx, bind ?? '0.0.0.0', port, '/', handle)
  return handle
}

/** ws_echo.py on `port` (bound to `bind`), uploaded and started; resolves its handle. */
export async function startEchoServer(sbx, port, { bind = '0.0.0.0' } = {}) {
  await sbx.files.write(ECHO_PATH, readFileSync(ECHO_SOURCE, 'utf8'))
  const handle = await sbx.commands.run(`python3 ${ECHO_PATH} ${port} ${bind}`, { background: true, timeoutMs: 0 })
  await waitListening(sbx, bind, port, '/ready', handle)
  return handle
}
