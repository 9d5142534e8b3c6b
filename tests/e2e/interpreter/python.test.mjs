// runCode in the default python context through the unchanged npm @e2b/code-interpreter 2.8.0:
// results, state, output callbacks, errors, rich results (charts, DataFrames, display(), JSON),
// non-ASCII text, and environment variables per call and per sandbox. One sandbox for the file.
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'

import { T, killAll, lazy, newSandbox, noError, safeJson } from './helpers.mjs'

const GLOBAL_ENV = { COVE_CI_GLOBAL: 'from-create', COVE_CI_SHADOW: 'global' }
const sandbox = lazy(() => newSandbox({ envs: GLOBAL_ENV }))

after(killAll)

async function run(code, opts) {
  const sbx = await sandbox()
  return sbx.runCode(code, opts)
}

/** The one result that has `key`; fails naming every result otherwise. */
function resultWith(execution, key) {
  const found = execution.results.filter((r) => r[key] !== undefined)
  assert.equal(found.length, 1, `expected one result with ${key}, got ${safeJson(execution.results.map((r) => r.raw))}`)
  return found[0]
}

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

function assertPng(b64, what) {
  assert.equal(typeof b64, 'string', `${what}: png is a base64 string`)
  const bytes = Buffer.from(b64, 'base64')
  assert.ok(bytes.length > 1000, `${what}: png has ${bytes.length} bytes`)
  assert.deepEqual(bytes.subarray(0, 8), PNG_MAGIC, `${what}: png signature`)
}

describe('python basics', () => {
  test("runCode('1+1').text is '2'", T, async () => {
    const e = noError(await run('1+1'), '1+1')
    assert.equal(e.text, '2')
    assert.equal(e.results.length, 1)
    assert.equal(e.results[0].isMainResult, true)
    assert.deepEqual(e.logs, { stdout: [], stderr: [] })
    assert.equal(typeof e.executionCount, 'number')
  })

  test('state is kept between cells, and the execution count grows', T, async () => {
    const a = noError(await run('x = 41'), 'x = 41')
    assert.equal(a.results.length, 0, 'an assignment has no result')
    const b = noError(await run('x + 1'), 'x + 1')
    assert.equal(b.text, '42')
    assert.ok(b.executionCount > a.executionCount, `execution count ${a.executionCount} then ${b.executionCount}`)
  })

  test('onStdout/onStderr fire in output order; logs hold each stream', T, async () => {
    const events = []
    const code = [
      'import sys, time',
      "print('one'); sys.stdout.flush(); time.sleep(0.1)",
      "print('two', file=sys.stderr); sys.stderr.flush(); time.sleep(0.1)",
      "print('three'); sys.stdout.flush()",
    ].join('\n')
    const e = noError(
      await run(code, {
        onStdout: (m) => events.push(['stdout', m.line, m.error]),
        onStderr: (m) => events.push(['stderr', m.line, m.error]),
      }),
      'prints',
    )
    // ipykernel may batch a stream's output; merge consecutive chunks of one stream.
    const merged = []
    for (const [stream, line, isError] of events) {
      assert.equal(isError, stream === 'stderr', `error flag of a ${stream} message`)
      const last = merged.at(-1)
      if (last && last[0] === stream) last[1] += line
      else merged.push([stream, line])
    }
    assert.deepEqual(merged, [['stdout', 'one\n'], ['stderr', 'two\n'], ['stdout', 'three\n']])
    assert.equal(e.logs.stdout.join(''), 'one\nthree\n')
    assert.equal(e.logs.stderr.join(''), 'two\n')
  })

  test('ZeroDivisionError: name, value, a plain traceback, no results; the next cell works', T, async () => {
    const e = await run('1 / 0')
    assert.ok(e.error, 'an error')
    assert.equal(e.error.name, 'ZeroDivisionError')
    assert.equal(e.error.value, 'division by zero')
    assert.equal(typeof e.error.traceback, 'string')
    assert.match(e.error.traceback, /ZeroDivisionError/)
    assert.match(e.error.traceback, /1 \/ 0/, 'the traceback shows the failing line')
    assert.ok(!e.error.traceback.includes('\x1b['), 'no ANSI colour codes in the traceback')
    assert.equal(e.results.length, 0)
    assert.equal(noError(await run('1+1'), 'after the error').text, '2')
  })

  test('NameError of an undefined name', T, async () => {
    const e = await run('undefined_name_xyz')
    assert.equal(e.error?.name, 'NameError')
    assert.equal(e.error.value, "name 'undefined_name_xyz' is not defined")
  })

  test('non-ASCII output and results are intact', T, async () => {
    const text = 'héllo ✓ 😀'
    const out = noError(await run(`print('${text}')`), 'print')
    assert.equal(out.logs.stdout.join(''), `${text}\n`)
    const res = noError(await run(`'${text}'`), 'result')
    assert.equal(res.text, text, 'quotes stripped, characters intact')
    // Large enough to cross chunk boundaries of the HTTP body (UTF-8 split across reads).
    const big = noError(await run("print('é✓😀' * 30000)"), 'big print')
    assert.equal(big.logs.stdout.join(''), `${'é✓😀'.repeat(30000)}\n`)
  })

  test('a list gives json; a dict too', T, async () => {
    const list = noError(await run("[1, 2, 'three']"), 'list')
    assert.equal(list.results.length, 1)
    assert.deepEqual(list.results[0].json, [1, 2, 'three'])
    assert.equal(list.text, "[1, 2, 'three']")
    const dict = noError(await run("{'k': [1, 2], 'n': None}"), 'dict')
    assert.deepEqual(dict.results[0].json, { k: [1, 2], n: null })
  })

  test('a DataFrame gives html and data', T, async () => {
    const e = noError(
      await run("import pandas as pd\npd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})"),
      'DataFrame',
    )
    assert.equal(e.results.length, 1, safeJson(e.results.map((r) => r.raw)))
    const r = e.results[0]
    assert.equal(r.isMainResult, true)
    assert.match(r.html ?? '', /<table/, 'html is a table')
    assert.deepEqual(r.data, { a: [1, 2, 3], b: ['x', 'y', 'z'] })
    assert.match(r.text ?? '', /a\s+b/, 'a text form too')
  })

  test('display() of several objects gives several results, then the main one', T, async () => {
    const code = [
      'from IPython.display import display, HTML, Markdown',
      "display(HTML('<b>one</b>'))",
      "display(Markdown('**two**'))",
      "display({'three': 3})",
      '42',
    ].join('\n')
    const e = noError(await run(code), 'display')
    assert.equal(e.results.length, 4, safeJson(e.results.map((r) => r.raw)))
    const [one, two, three, main] = e.results
    assert.equal(one.html, '<b>one</b>')
    assert.equal(two.markdown, '**two**')
    assert.deepEqual(three.json, { three: 3 })
    for (const r of [one, two, three]) assert.equal(r.isMainResult, false)
    assert.equal(main.isMainResult, true)
    assert.equal(main.text, '42')
    assert.equal(e.text, '42')
  })

  test('matplotlib: a line plot gives png and a line chart', T, async () => {
    const code = [
      'import matplotlib.pyplot as plt',
      'import numpy as np',
      'x = np.linspace(0, 10, 50)',
      'plt.figure()',
      "plt.plot(x, np.sin(x), label='sin')",
      "plt.plot(x, np.cos(x), label='cos')",
      "plt.title('Waves')",
      "plt.xlabel('time')",
      "plt.ylabel('amplitude')",
      'plt.legend()',
      'plt.show()',
    ].join('\n')
    const e = noError(await run(code, { timeoutMs: 50_000 }), 'line plot')
    const r = resultWith(e, 'png')
    assertPng(r.png, 'line plot')
    assert.ok(r.chart, `a chart beside the png: ${safeJson(r.raw)}`)
    assert.equal(r.chart.type, 'line')
    assert.equal(r.chart.title, 'Waves')
    assert.equal(r.chart.x_label, 'time')
    assert.equal(r.chart.y_label, 'amplitude')
    assert.deepEqual(r.chart.elements.map((el) => el.label), ['sin', 'cos'])
    const points = r.chart.elements[0].points
    assert.equal(points.length, 50)
    assert.ok(Math.abs(points[0][0]) < 1e-9 && Math.abs(points[0][1]) < 1e-9, `first point ${safeJson(points[0])}`)
    assert.ok(Math.abs(points[49][0] - 10) < 1e-9, `last x ${points[49][0]}`)
  })

  test('matplotlib: bar, scatter and pie charts', T, async () => {
    const bar = noError(
      await run("import matplotlib.pyplot as plt\nplt.figure()\nplt.bar(['A', 'B', 'C'], [3, 5, 2])\nplt.title('Bars')\nplt.show()"),
      'bar',
    )
    const b = resultWith(bar, 'chart').chart
    assert.equal(b.type, 'bar')
    assert.equal(b.title, 'Bars')
    assert.deepEqual(b.elements.map((el) => [el.label, el.value]), [['A', 3], ['B', 5], ['C', 2]])

    const scatter = noError(
      await run("import matplotlib.pyplot as plt\nplt.figure()\nplt.scatter([1, 2, 3], [4, 5, 6], label='pts')\nplt.title('Dots')\nplt.show()"),
      'scatter',
    )
    const s = resultWith(scatter, 'chart').chart
    assert.equal(s.type, 'scatter')
    assert.equal(s.title, 'Dots')
    assert.equal(s.elements.length, 1)
    assert.deepEqual(s.elements[0].points.map(([x, y]) => [Number(x), Number(y)]), [[1, 4], [2, 5], [3, 6]])

    const pie = noError(
      await run("import matplotlib.pyplot as plt\nplt.figure()\nplt.pie([1, 2, 3], labels=['a', 'b', 'c'])\nplt.title('Slices')\nplt.show()"),
      'pie',
    )
    const p = resultWith(pie, 'chart').chart
    assert.equal(p.type, 'pie')
    assert.equal(p.title, 'Slices')
    assert.deepEqual(p.elements.map((el) => el.label), ['a', 'b', 'c'])
    const total = p.elements.reduce((sum, el) => sum + el.angle, 0)
    assert.ok(Math.abs(total - 360) < 1e-6, `pie angles add up to ${total}`)
    assert.ok(p.elements[2].angle > p.elements[0].angle, 'the larger slice has the larger angle')
  })

  test('envs of one call are visible in it and undone on the next call', T, async () => {
    const code = "import os\nstr(os.getenv('FOO'))"
    const withEnv = noError(await run(code, { envs: { FOO: 'bar' } }), 'with envs')
    assert.equal(withEnv.text, 'bar')
    const after = noError(await run(code), 'without envs')
    assert.equal(after.text, 'None')
  })

  test('sandbox-wide envs from Sandbox.create are visible; a per-call value is restored to them', T, async () => {
    const code = "import os\nos.environ.get('COVE_CI_GLOBAL') + '/' + os.environ.get('COVE_CI_SHADOW')"
    assert.equal(noError(await run(code), 'globals').text, 'from-create/global')
    const shadowed = noError(await run(code, { envs: { COVE_CI_SHADOW: 'call' } }), 'shadowed')
    assert.equal(shadowed.text, 'from-create/call')
    assert.equal(noError(await run(code), 'restored').text, 'from-create/global')
    // A context made later gets them too.
    const sbx = await sandbox()
    const ctx = await sbx.createCodeContext()
    try {
      assert.equal(noError(await sbx.runCode(code, { context: ctx }), 'new context').text, 'from-create/global')
    } finally {
      await sbx.removeCodeContext(ctx)
    }
  })
})
