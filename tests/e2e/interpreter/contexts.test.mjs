// Contexts and languages through the unchanged npm @e2b/code-interpreter 2.8.0: create (cwd),
// list, restart, remove, NotFound paths, javascript/typescript/bash/r state, the execution timeout
// interrupting the kernel, concurrency across contexts and order within one, and a kernel that
// dies. One sandbox for the file; every test removes the contexts it makes.
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'

import { NotFoundError, SandboxError, TimeoutError } from '@e2b/code-interpreter'

import { T, killAll, lazy, newSandbox, noError, rejectsWith, safeJson, sleep, timed } from './helpers.mjs'

const sandbox = lazy(() => newSandbox())

after(killAll)

/** Runs fn(sbx, ctx) with a fresh context, removed afterwards (when the test did not remove it). */
async function withContext(opts, fn) {
  const sbx = await sandbox()
  const ctx = await sbx.createCodeContext(opts)
  try {
    return await fn(sbx, ctx)
  } finally {
    await sbx.removeCodeContext(ctx).catch(() => {})
  }
}

describe('contexts', () => {
  test('the default python and javascript contexts exist at start, in /home/user', T, async () => {
    const sbx = await sandbox()
    const list = await sbx.listCodeContexts()
    assert.ok(Array.isArray(list), safeJson(list))
    for (const language of ['python', 'javascript']) {
      const c = list.find((x) => x.language === language)
      assert.ok(c, `a ${language} context in ${safeJson(list)}`)
      assert.equal(typeof c.id, 'string')
      assert.equal(c.cwd, '/home/user')
    }
    assert.equal(noError(await sbx.runCode('import os\nos.getcwd()'), 'default cwd').text, '/home/user')
  })

  test('createCodeContext({cwd: "/tmp"}) runs in /tmp and is listed last', T, async () => {
    await withContext({ cwd: '/tmp' }, async (sbx, ctx) => {
      assert.equal(typeof ctx.id, 'string')
      assert.ok(ctx.id.length > 0)
      assert.equal(ctx.language, 'python')
      assert.equal(ctx.cwd, '/tmp')
      const e = noError(await sbx.runCode('import os\nos.getcwd()', { context: ctx }), 'getcwd')
      assert.equal(e.text, '/tmp')
      const list = await sbx.listCodeContexts()
      assert.deepEqual(list.at(-1), { id: ctx.id, language: 'python', cwd: '/tmp' })
      assert.equal(list.filter((c) => c.id === ctx.id).length, 1)
    })
  })

  test('a context has its own state', T, async () => {
    await withContext({}, async (sbx, ctx) => {
      noError(await sbx.runCode('only_here = 7', { context: ctx }), 'assign')
      assert.equal(noError(await sbx.runCode('only_here * 6', { context: ctx }), 'read').text, '42')
      const other = await sbx.runCode('only_here')
      assert.equal(other.error?.name, 'NameError', 'the default context does not see it')
    })
  })

  test('restartCodeContext keeps the id and drops the state', T, async () => {
    await withContext({}, async (sbx, ctx) => {
      noError(await sbx.runCode('x = 1', { context: ctx }), 'x = 1')
      await sbx.restartCodeContext(ctx)
      const e = await sbx.runCode('x', { context: ctx })
      assert.equal(e.error?.name, 'NameError', safeJson(e))
      assert.equal(e.error.value, "name 'x' is not defined")
      assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id), 'still listed under its id')
      assert.equal(noError(await sbx.runCode('1+1', { context: ctx }), 'after restart').text, '2')
    })
  })

  test('removeCodeContext: gone from the list; running on it is NotFoundError', T, async () => {
    const sbx = await sandbox()
    const ctx = await sbx.createCodeContext()
    await sbx.removeCodeContext(ctx)
    assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id), 'not listed')
    const err = await rejectsWith(sbx.runCode('1+1', { context: ctx }), NotFoundError, 'runCode on a removed context')
    assert.match(err.message, new RegExp(`Context ${ctx.id} not found`))
    await rejectsWith(sbx.removeCodeContext(ctx), NotFoundError, 'removing it again')
    await rejectsWith(sbx.restartCodeContext(ctx), NotFoundError, 'restarting it')
    await rejectsWith(sbx.removeCodeContext('no-such-context'), NotFoundError, 'removing an unknown id')
  })

  test('an unknown language cannot make a context (500)', T, async () => {
    const sbx = await sandbox()
    const err = await rejectsWith(sbx.createCodeContext({ language: 'cobol' }), SandboxError, 'language cobol')
    assert.match(err.message, /^500 /)
  })
})

describe('languages', () => {
  test("javascript via language: 'js' keeps state between cells", T, async () => {
    const sbx = await sandbox()
    noError(await sbx.runCode('globalThis.counter = 5', { language: 'js' }), 'set')
    const e = noError(await sbx.runCode('counter * 2', { language: 'js' }), 'read')
    assert.equal(e.text, '10')
  })

  test('a javascript context: state, console.log, errors', T, async () => {
    await withContext({ language: 'js' }, async (sbx, ctx) => {
      assert.equal(ctx.language, 'javascript')
      noError(await sbx.runCode('let a = 20\nfunction twice(n) { return 2 * n }', { context: ctx }), 'define')
      assert.equal(noError(await sbx.runCode('twice(a) + 2', { context: ctx }), 'call').text, '42')
      const out = noError(await sbx.runCode("console.log('hello from js')", { context: ctx }), 'console.log')
      assert.equal(out.logs.stdout.join(''), 'hello from js\n')
      const err = await sbx.runCode("throw new Error('boom')", { context: ctx })
      assert.equal(err.error?.name, 'Error', safeJson(err))
      assert.equal(err.error.value, 'boom')
      assert.equal(noError(await sbx.runCode('a', { context: ctx }), 'after the error').text, '20')
    })
  })

  test("typescript via language: 'ts' and a ts context keep state", T, async () => {
    const sbx = await sandbox()
    noError(await sbx.runCode('const tsValue: number = 41', { language: 'ts' }), 'ts declare')
    assert.equal(noError(await sbx.runCode('tsValue + 1', { language: 'ts' }), 'ts read').text, '42')
    await withContext({ language: 'ts' }, async (sbx, ctx) => {
      assert.equal(ctx.language, 'typescript')
      noError(await sbx.runCode('interface P { n: number }\nconst p: P = { n: 3 }', { context: ctx }), 'interface')
      assert.equal(noError(await sbx.runCode('p.n * 3', { context: ctx }), 'use').text, '9')
    })
  })

  test("bash via language: 'bash' keeps variables and cwd", T, async () => {
    const sbx = await sandbox()
    noError(await sbx.runCode('export COVE_B=5; cd /tmp', { language: 'bash' }), 'set')
    const e = noError(await sbx.runCode('echo "$COVE_B $(pwd)"', { language: 'bash' }), 'read')
    assert.equal(e.logs.stdout.join(''), '5 /tmp\n')
    const list = await sbx.listCodeContexts()
    assert.ok(list.some((c) => c.language === 'bash'), `a bash context is listed: ${safeJson(list)}`)
  })

  test('a bash context keeps state too', T, async () => {
    await withContext({ language: 'bash', cwd: '/tmp' }, async (sbx, ctx) => {
      assert.equal(ctx.language, 'bash')
      noError(await sbx.runCode('N=3; f() { echo "n=$1"; }', { context: ctx }), 'define')
      const e = noError(await sbx.runCode('f $((N * 2)); pwd', { context: ctx }), 'use')
      assert.equal(e.logs.stdout.join(''), 'n=6\n/tmp\n')
    })
  })

  test("r via language: 'r' (the template installs IRkernel)", T, async () => {
    const sbx = await sandbox()
    // IRkernel shows values as display_data, so the result is not the main one.
    const e = noError(await sbx.runCode('1+1', { language: 'r', timeoutMs: 50_000 }), 'r 1+1')
    assert.equal(e.results.length, 1, safeJson(e.results.map((r) => r.raw)))
    assert.equal(e.results[0].text, '[1] 2')
    noError(await sbx.runCode('y <- 20', { language: 'r' }), 'r assign')
    assert.equal(noError(await sbx.runCode('y + 1', { language: 'r' }), 'r read').results[0]?.text, '[1] 21')
    const list = await sbx.listCodeContexts()
    assert.ok(list.some((c) => c.language === 'r'), `an r context is listed: ${safeJson(list)}`)
  })
})

describe('execution', () => {
  test('timeoutMs interrupts time.sleep(30); the next cell on the context returns quickly', T, async () => {
    await withContext({}, async (sbx, ctx) => {
      const { ms } = await timed(() =>
        rejectsWith(
          sbx.runCode('import time\ntime.sleep(30)', { context: ctx, timeoutMs: 3_000 }),
          TimeoutError,
          'time.sleep(30) with timeoutMs 3000',
        ),
      )
      assert.ok(ms < 8_000, `the timeout came after ${Math.round(ms)} ms`)
      await sleep(1_000)
      const next = await timed(() => sbx.runCode('1+1', { context: ctx, timeoutMs: 20_000 }))
      assert.equal(noError(next.value, 'after the timeout').text, '2')
      assert.ok(next.ms < 5_000, `1+1 after the interrupt took ${Math.round(next.ms)} ms (kernel not interrupted?)`)
    })
  })

  test('two contexts execute concurrently', T, async () => {
    const sbx = await sandbox()
    const [a, b] = [await sbx.createCodeContext(), await sbx.createCodeContext()]
    try {
      // First runs (and the global env injection) happen before the timed part.
      noError(await sbx.runCode('import time', { context: a }), 'warm a')
      noError(await sbx.runCode('import time', { context: b }), 'warm b')
      const { ms, value } = await timed(() =>
        Promise.all([
          sbx.runCode('time.sleep(2)\nprint("a")', { context: a }),
          sbx.runCode('time.sleep(2)\nprint("b")', { context: b }),
        ]),
      )
      assert.deepEqual(value.map((e) => noError(e, 'sleep').logs.stdout.join('')), ['a\n', 'b\n'])
      assert.ok(ms < 3_500, `two 2 s sleeps on two contexts took ${Math.round(ms)} ms`)
    } finally {
      await sbx.removeCodeContext(a).catch(() => {})
      await sbx.removeCodeContext(b).catch(() => {})
    }
  })

  test('executions on one context run one at a time, in order', T, async () => {
    await withContext({}, async (sbx, ctx) => {
      noError(await sbx.runCode('import time\norder = []', { context: ctx }), 'setup')
      // The second request leaves once the first one runs (two connections give no arrival order).
      const { ms, value } = await timed(async () => {
        const first = sbx.runCode('time.sleep(1)\norder.append(1)', { context: ctx })
        await sleep(300)
        const second = timed(() => sbx.runCode('time.sleep(1)\norder.append(2)', { context: ctx }))
        return [await first, await second]
      })
      noError(value[0], 'first sleep')
      noError(value[1].value, 'second sleep')
      assert.ok(ms >= 1_900, `two 1 s cells on one context took only ${Math.round(ms)} ms`)
      assert.ok(value[1].ms >= 1_500, `the second cell waited for the first: it took ${Math.round(value[1].ms)} ms`)
      assert.deepEqual(noError(await sbx.runCode('order', { context: ctx }), 'order').results[0].json, [1, 2])
    })
  })

  test('a kernel that dies fails its execution with ContextRestarting and comes back', T, async () => {
    await withContext({}, async (sbx, ctx) => {
      noError(await sbx.runCode('before = 1', { context: ctx }), 'state')
      const e = await sbx.runCode('import os, signal\nos.kill(os.getpid(), signal.SIGKILL)', { context: ctx, timeoutMs: 30_000 })
      assert.equal(e.error?.name, 'ContextRestarting', safeJson(e))
      assert.equal(e.error.value, 'Context was restarted')
      const next = noError(await sbx.runCode('1+1', { context: ctx, timeoutMs: 30_000 }), 'after the death')
      assert.equal(next.text, '2')
      assert.equal((await sbx.runCode('before', { context: ctx })).error?.name, 'NameError', 'a fresh kernel')
    })
  })
})
