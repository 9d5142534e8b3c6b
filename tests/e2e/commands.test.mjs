// commands.run through the e2b SDK: exact output, exit codes, concurrency.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { CommandExitError } from 'e2b'
import { TEST_TIMEOUT, createSandbox, lazy } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }
const sandbox = lazy(createSandbox)

describe('commands.run', () => {
  test('exact stdout and stderr', T, async () => {
    const sbx = await sandbox()
    const r = await sbx.commands.run('echo hello; echo err >&2')
    assert.equal(r.exitCode, 0)
    assert.equal(r.stdout, 'hello\n')
    assert.equal(r.stderr, 'err\n')
    assert.equal(r.error, undefined)
  })

  test('multi-line output and a multi-line script', T, async () => {
    const sbx = await sandbox()
    const r = await sbx.commands.run("printf 'line1\\nline2\\n\\nline4'")
    assert.equal(r.stdout, 'line1\nline2\n\nline4')
    const s = await sbx.commands.run('echo one\necho two\n  echo three')
    assert.equal(s.stdout, 'one\ntwo\nthree\n')
  })

  test('special characters and UTF-8 pass through unchanged', T, async () => {
    const sbx = await sandbox()
    const special = '!@#$%^&*()_+-=[]{}|;:",./<>?~`\\'
    const r = await sbx.commands.run(`echo '${special}'`)
    assert.equal(r.stdout, `${special}\n`)

    const unicode = 'héllo wörld ✓ 日本語 🚀'
    const u = await sbx.commands.run(`echo '${unicode}'`)
    assert.equal(u.stdout, `${unicode}\n`)

    // Quotes, $, backslashes and newlines through a request env var, printed verbatim.
    const tricky = `it's "quoted" $HOME \\n back\\slash\nsecond line\ttab`
    const e = await sbx.commands.run('printf %s "$COVE_E2E_TRICKY"', { envs: { COVE_E2E_TRICKY: tricky } })
    assert.equal(e.stdout, tricky)
  })

  test('large output arrives complete and in order', T, async () => {
    const sbx = await sandbox()
    const r = await sbx.commands.run('seq 1 20000')
    const expected = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('')
    assert.equal(r.stdout.length, expected.length)
    assert.equal(r.stdout, expected)
  })

  test('non-zero exit rejects with CommandExitError carrying exitCode, stdout and stderr', T, async () => {
    const sbx = await sandbox()
    const err = await sbx.commands.run('echo out; echo oops >&2; exit 3').then(
      () => assert.fail('expected CommandExitError'),
      (e) => e,
    )
    assert.ok(err instanceof CommandExitError, `got ${err?.name}: ${err?.message}`)
    assert.equal(err.exitCode, 3)
    assert.equal(err.stdout, 'out\n')
    assert.equal(err.stderr, 'oops\n')
    assert.equal(err.error, 'exit status 3')
  })

  test('missing binary gives CommandExitError with exit code 127', T, async () => {
    const sbx = await sandbox()
    const err = await sbx.commands.run('definitely-not-a-command-xyz').then(
      () => assert.fail('expected CommandExitError'),
      (e) => e,
    )
    assert.ok(err instanceof CommandExitError, `got ${err?.name}: ${err?.message}`)
    assert.equal(err.exitCode, 127)
    assert.match(err.stderr, /definitely-not-a-command-xyz: command not found/)
    assert.equal(err.stdout, '')
  })

  test('40 concurrent commands each get their own output', T, async () => {
    const sbx = await sandbox()
    const n = 40
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => sbx.commands.run(`echo $((${i} * ${i})) worker-${i}; echo e-${i} >&2`)),
    )
    results.forEach((r, i) => {
      assert.equal(r.exitCode, 0)
      assert.equal(r.stdout, `${i * i} worker-${i}\n`, `stdout of command ${i}`)
      assert.equal(r.stderr, `e-${i}\n`, `stderr of command ${i}`)
    })
  })
})
