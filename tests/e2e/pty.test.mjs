// Interactive PTY sessions through sandbox.pty.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { CommandExitError } from 'e2b'
import { TEST_TIMEOUT, createSandbox, lazy, pollUntil, settleWithin } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }
const sandbox = lazy(createSandbox)

/**
 * The complete lines of terminal output as a user would read them: escape sequences (colours,
 * window title, bracketed-paste toggles) removed, and within a line only the text after the
 * last carriage return. The prompt line still being typed (no newline yet) is left out.
 */
function screenLines(out) {
  const plain = out
    .replace(/\x1b\][^\x07\x1b]*(\x07|\x1b\\)/g, '') // OSC ... BEL|ST
    .replace(/\x1b\[[0-?]*[ -\/]*[@-~]/g, '') // CSI
    .replace(/\x1b[()][0-9A-Za-z]|\x1b[=>]/g, '')
  return plain
    .split('\n')
    .slice(0, -1)
    .map((line) => line.replace(/\r+$/, '').split('\r').at(-1))
}

describe('pty', () => {
  test('create, input, resize, kill', T, async () => {
    const sbx = await sandbox()
    const encoder = new TextEncoder()
    const decoder = new TextDecoder()
    let out = ''
    const pty = await sbx.pty.create({
      cols: 80,
      rows: 24,
      onData: (data) => {
        out += decoder.decode(data, { stream: true })
      },
    })
    assert.ok(Number.isInteger(pty.pid) && pty.pid > 0, `pid ${pty.pid}`)

    // The terminal echoes the typed line after the prompt, so look for a line that is exactly the output.
    await sbx.pty.sendInput(pty.pid, encoder.encode('echo pty-ok\n'))
    await pollUntil(
      () => screenLines(out),
      (lines) => lines.includes('pty-ok'),
      { timeoutMs: 5_000, what: '`pty-ok` output line' },
    )

    await sbx.pty.sendInput(pty.pid, encoder.encode('stty size; tty\n'))
    await pollUntil(
      () => screenLines(out),
      (lines) => lines.some((l, i) => l === '24 80' && /^\/dev\/pts\/\d+$/.test(lines[i + 1] ?? '')),
      { timeoutMs: 5_000, what: 'initial `stty size` = 24 80 on a /dev/pts terminal' },
    )

    await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 })
    await sbx.pty.sendInput(pty.pid, encoder.encode('stty size\n'))
    await pollUntil(
      () => screenLines(out),
      (lines) => lines.includes('30 100'),
      { timeoutMs: 5_000, what: '`stty size` = 30 100 after resize' },
    )

    assert.equal(await sbx.pty.kill(pty.pid), true)
    const r = await settleWithin(pty.wait(), 5_000, 'pty handle wait() after kill')
    assert.equal(r.ok, false, 'wait() resolved although the pty was killed')
    assert.ok(r.error instanceof CommandExitError, `got ${r.error?.name}: ${r.error?.message}`)
    assert.equal(r.error.exitCode, -1)
    assert.equal(await sbx.pty.kill(pty.pid), false, 'a killed pty must be gone')
  })
})
