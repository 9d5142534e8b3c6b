// Templates through the TLS edge with the official npm `e2b` 2.51.0: Template.build() of a
// template from `base` (COPY of a file and a directory, RUN as root and as user, ENV, WORKDIR,
// USER, a start command with a ready check), the layer cache on a rebuild, a failing RUN, exists /
// tags / delete, an unknown template, and a Dockerfile through Template.fromDockerfile.
// run.sh runs this file in the tls-h2 and tls-h1 phases against the same state directory, so
// every alias is unique per process and the first build starts with a step no earlier build had.
//
// The build context is fixtures/template-app/: hello.txt (0644), assets/data.txt (0644) and
// assets/run.sh (0755).
import assert from 'node:assert/strict'
import { statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { after, test } from 'node:test'

import { BuildError, Sandbox, Template, waitForPort } from 'e2b'
import { phaseLabel } from './edge_client.mjs'
import { RUN_ID, TLS_CLIENT, killTracked, newSandbox, sh, track } from './helpers.mjs'
import { aliasMaker, build, cachedSteps, deleteTemplate, deleteTrackedTemplates, errorText, mustBuild, rand, showLogs } from './template_builds.mjs'

const P = phaseLabel()
const CONTEXT = fileURLToPath(new URL('./fixtures/template-app/', import.meta.url))
const HELLO = 'hello from the template context'

// A build runs every step in a build sandbox; the first one may also prepare `base`.
const T_BUILD = { timeout: 600_000 }

const uniqueAlias = aliasMaker('e2e-tpl')
const metadata = { run: RUN_ID, file: 'tls_templates' }

after(async () => {
  await killTracked()
  await deleteTrackedTemplates()
})

/** The steps exactly as the SDK sends them (its own serialisation, without file hashes). */
async function stepsOf(template) {
  return JSON.parse(await Template.toJSON(template, false)).steps
}

/** The line this is called from, as the SDK's stack frames show it ("<file url>:<line>:"). */
function thisLine() {
  const frame = new Error().stack.split('\n').slice(2).find((l) => l.includes(import.meta.url))
  return `${import.meta.url}:${/:(\d+):\d+\)?$/.exec(frame)[1]}:`
}

/** stat of a fixture file: octal permission bits as `stat -c %a` prints them. */
const fixtureMode = (rel) => (statSync(`${CONTEXT}/${rel}`).mode & 0o777).toString(8)

/** Sandbox.create that must fail; returns the error (a sandbox it made anyway is killed). */
async function createMustFail(template) {
  return Sandbox.create(template, { timeoutMs: 30_000, metadata }).then(
    async (sbx) => {
      track(sbx)
      await sbx.kill().catch(() => {})
      assert.fail(`Sandbox.create('${template}') made sandbox ${sbx.sandboxId}`)
    },
    (e) => e,
  )
}

// ---- The application template (tests 1, 2 and 4 share its first build) ----------------------

const APP_ALIAS = uniqueAlias('app')
// Unique per process: makes the first build cold even though the other TLS phase (same state
// directory) built the same steps under another alias.
const NONCE = `nonce-${process.pid}-${rand()}`
const APP_OPTIONS = { tags: ['v1'], cpuCount: 2, memoryMB: 384 }

function appTemplate() {
  return Template({ fileContextPath: CONTEXT })
    .fromTemplate('base')
    .runCmd(`echo ${NONCE} > /opt/build-nonce && echo built-as-root > /opt/marker && id -u > /opt/root-uid`, { user: 'root' })
    .copy('hello.txt', '/app/', { user: 'user', mode: 0o755 })
    .copy('hello.txt', `/opt/hello-${NONCE}.txt`)
    .copy('assets', '/app/assets')
    .setEnvs({ A: '1', B: 'two words' })
    .runCmd('whoami > /home/user/who && echo "$A|$B" > /home/user/build-env', { user: 'user' })
    .setWorkdir('/app')
    .setUser('user')
    .setStartCmd('python3 -m http.server 3000', waitForPort(3000))
}

let firstAppBuild
let latestAppBuild
/** The first build of the app template (memoised: the tests after the first reuse it). */
function appBuild() {
  firstAppBuild ??= mustBuild(appTemplate(), APP_ALIAS, APP_OPTIONS).then((b) => {
    latestAppBuild = b
    return b
  })
  return firstAppBuild
}

test(`${P} Template.build from base: COPY, RUN as root and user, ENV, WORKDIR, USER, start + ready`, T_BUILD, async () => {
  assert.ok(TLS_CLIENT, 'E2B_DOMAIN is not set: run this file through run.sh')
  const { info, messages } = await appBuild()
  assert.equal(info.name, APP_ALIAS)
  assert.match(info.templateId, /^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'templateId')
  assert.ok(info.buildId, 'buildId')
  assert.ok(info.tags.includes('v1'), `tags of the build: ${JSON.stringify(info.tags)}`)
  // One files check per COPY. The files of `/app/` and `/app/assets` may already be on the server
  // (the other TLS phase copied the same files there: same filesHash), but nothing before had
  // the destination with the nonce, which is part of the hash: that one was uploaded (PUT).
  const fileChecks = messages.filter((m) => /^(Uploaded '|Skipping upload of ')/.test(m))
  assert.equal(fileChecks.length, 3, `one upload or skip per COPY; ${showLogs(messages)}`)
  assert.ok(messages.includes("Uploaded 'hello.txt'"), `no upload of a new filesHash; ${showLogs(messages)}`)
  // No step came from the cache: the first step is new, so nothing after it can be.
  const steps = await stepsOf(appTemplate())
  assert.equal(steps.length, 8)
  assert.deepEqual(cachedSteps(messages, steps), steps.map(() => false), `a step of a cold build was CACHED; ${showLogs(messages)}`)

  const sbx = await newSandbox({ template: APP_ALIAS, metadata, timeoutMs: 120_000 })
  try {
    // The start command was ready when create answered: no retry, no wait.
    const index = await fetch(`https://${sbx.getHost(3000)}/`, { signal: AbortSignal.timeout(15_000) })
    const listing = await index.text()
    assert.equal(index.status, 200, `GET / on port 3000 right after create: ${listing.slice(0, 300)}`)
    assert.match(listing, /hello\.txt/, 'http.server lists the workdir /app')
    assert.match(listing, /assets\//)
    const served = await fetch(`https://${sbx.getHost(3000)}/hello.txt`, { signal: AbortSignal.timeout(15_000) })
    assert.equal(served.status, 200)
    assert.equal(await served.text(), `${HELLO}\n`)
    // It runs as the template's user.
    assert.equal(await sh(sbx, "ps -eo user:32,args | awk '/[h]ttp.server 3000/ { print $1 }' | sort -u"), 'user')

    // This build, not another one with the same alias.
    assert.equal(await sh(sbx, 'cat /opt/build-nonce'), NONCE)
    const sbxInfo = await sbx.getInfo()
    assert.equal(sbxInfo.templateId, info.templateId, `getInfo: ${JSON.stringify(sbxInfo)}`)
    assert.equal(sbxInfo.name, APP_ALIAS)
    assert.equal(sbxInfo.cpuCount, 2, 'cpuCount of the build')
    assert.equal(sbxInfo.memoryMB, 384, 'memoryMB of the build')

    // COPY of a file with user and mode, into a directory (dest ends in /).
    assert.equal(await sbx.files.read('/app/hello.txt'), `${HELLO}\n`)
    assert.equal(await sh(sbx, 'stat -c "%a %U" /app/hello.txt'), '755 user')
    // COPY of a file to a path not ending in /: that path is the file.
    assert.equal(await sbx.files.read(`/opt/hello-${NONCE}.txt`), `${HELLO}\n`)
    assert.equal(await sh(sbx, `stat -c %F /opt/hello-${NONCE}.txt`), 'regular file')
    // COPY of a directory: its contents land in the destination, modes kept from the tar.
    assert.equal(await sh(sbx, 'ls -A /app/assets | sort | tr "\\n" " "'), 'data.txt run.sh ')
    assert.equal(await sbx.files.read('/app/assets/data.txt'), 'data file of the assets directory\n')
    assert.equal(fixtureMode('assets/run.sh'), '755', 'fixture assets/run.sh must be executable (checkout mode)')
    assert.equal(await sh(sbx, 'stat -c %a /app/assets/data.txt'), fixtureMode('assets/data.txt'))
    assert.equal(await sh(sbx, 'stat -c %a /app/assets/run.sh'), '755')
    assert.equal(await sh(sbx, '/app/assets/run.sh'), 'run.sh ran as user')

    // RUN as root and as user.
    assert.equal(await sh(sbx, 'cat /opt/marker; stat -c %U /opt/marker'), 'built-as-root\nroot')
    assert.equal(await sh(sbx, 'cat /opt/root-uid'), '0')
    assert.equal(await sh(sbx, 'cat /home/user/who; stat -c %U /home/user/who'), 'user\nuser')
    // ENV: seen by the RUN after it, and by commands in the sandbox.
    assert.equal(await sh(sbx, 'cat /home/user/build-env'), '1|two words')
    assert.equal(await sh(sbx, 'echo $A $B'), '1 two words')
    assert.equal(await sh(sbx, 'printf %s "$B"'), 'two words', 'B is one value with a space')
    // WORKDIR and USER are the sandbox's defaults.
    assert.equal(await sh(sbx, 'pwd'), '/app')
    assert.equal(await sh(sbx, 'whoami'), 'user')
  } finally {
    await sbx.kill().catch(() => {})
  }
})

test(`${P} the same steps again: every step CACHED, in under half the time`, T_BUILD, async () => {
  const first = await appBuild()
  const template = appTemplate()
  const steps = await stepsOf(template)
  const second = await mustBuild(template, APP_ALIAS, APP_OPTIONS)
  latestAppBuild = second
  const { messages } = second
  assert.equal(second.info.templateId, first.info.templateId, 'the same alias names the same template')
  assert.notEqual(second.info.buildId, first.info.buildId, 'a rebuild is a new build')
  // The context is already on the server: the files endpoint answers "present".
  const skipped = messages.filter((m) => /^Skipping upload of '(hello\.txt|assets)', already cached$/.test(m))
  assert.equal(skipped.length, 3, `every COPY's files are present; ${showLogs(messages)}`)
  const cached = cachedSteps(messages, steps)
  const missed = steps.flatMap((s, i) => (cached[i] ? [] : [`${i + 1}/${steps.length} ${s.type}`]))
  assert.deepEqual(missed, [], `steps without a CACHED log line; ${showLogs(messages)}`)
  assert.ok(
    second.ms < first.ms / 2,
    `the cached build took ${second.ms} ms, the first ${first.ms} ms (must be under half)`,
  )

  // The cached build still makes working sandboxes.
  const sbx = await newSandbox({ template: APP_ALIAS, metadata, timeoutMs: 120_000 })
  try {
    assert.equal(await sh(sbx, 'cat /opt/build-nonce'), NONCE)
    const index = await fetch(`https://${sbx.getHost(3000)}/`, { signal: AbortSignal.timeout(15_000) })
    await index.arrayBuffer()
    assert.equal(index.status, 200, 'start command ready right after create (cached build)')
  } finally {
    await sbx.kill().catch(() => {})
  }
})

test(`${P} a failing RUN: BuildError naming the step and its exit status`, T_BUILD, async () => {
  const alias = uniqueAlias('fail')
  const created = []
  const good = Template({ fileContextPath: CONTEXT })
    .fromTemplate('base')
    .runCmd(`echo ${NONCE} > /tmp/good-step`)
  // Step 2 of 2. The SDK points the error's stack at the call that added the step the server
  // names in `reason.step`, so the stack must show this line.
  const failing = good.runCmd('echo about to fail; exit 3'); const failingLine = thisLine()
  try {
    const err = await build(failing, alias, { created }).then(
      () => assert.fail('Template.build of a template whose RUN exits 3 resolved'),
      (e) => e,
    )
    const logs = showLogs(err?.buildLogs ?? [])
    assert.ok(err instanceof BuildError, `expected BuildError, got ${errorText(err)}; ${logs}`)
    assert.match(err.message, /exit status 3/, `message: ${err.message}; ${logs}`)
    assert.match(err.message, /\bstep\b|(^|\D)2\/2(\D|$)/i, `the message names no step: ${err.message}`)
    assert.ok(
      err.stack?.includes(failingLine),
      `BuildError.stack does not point at the failing runCmd (${failingLine}), so reason.step was not "2": ${err.stack}`,
    )
  } finally {
    for (const id of created) await deleteTemplate(id).catch(() => {})
  }
})

test(`${P} Template.exists, tags, delete; Sandbox.create of the deleted alias fails clearly`, T_BUILD, async () => {
  const { info } = await appBuild()
  const latest = latestAppBuild.info
  assert.equal(await Template.exists(APP_ALIAS), true, 'exists after the build')
  assert.equal(await Template.exists(`e2e-tpl-missing-${rand()}`), false, 'exists of a name never built')

  // Tags: v1 came with the builds (and moved to the latest); add stable, list, remove it.
  const assigned = await Template.assignTags(`${APP_ALIAS}:v1`, 'stable')
  assert.deepEqual(assigned.tags, ['stable'])
  assert.equal(assigned.buildId, latest.buildId, 'stable points at the build v1 names')
  let tags = await Template.getTags(info.templateId)
  const byName = (name) => tags.find((t) => t.tag === name)
  assert.ok(byName('v1') && byName('stable'), `getTags: ${JSON.stringify(tags)}`)
  assert.equal(byName('stable').buildId, latest.buildId)
  assert.equal(byName('v1').buildId, latest.buildId)
  assert.ok(!Number.isNaN(byName('stable').createdAt.getTime()), 'createdAt is a date')
  await Template.removeTags(APP_ALIAS, 'stable')
  tags = await Template.getTags(info.templateId)
  assert.ok(byName('v1'), `v1 is gone after removing stable: ${JSON.stringify(tags)}`)
  assert.equal(byName('stable'), undefined, `stable is still listed: ${JSON.stringify(tags)}`)

  // Delete (no sandbox uses it: the tests before killed theirs).
  assert.equal(await deleteTemplate(info.templateId), 204, 'DELETE /templates/<id>')
  assert.equal(await Template.exists(APP_ALIAS), false, 'exists after delete')
  const err = await createMustFail(APP_ALIAS)
  assert.ok(
    /not found/i.test(err?.message) || err?.message?.includes(APP_ALIAS),
    `Sandbox.create of a deleted template: ${errorText(err)}`,
  )
})

test(`${P} Sandbox.create of an unknown template fails with "not found"`, { timeout: 60_000 }, async () => {
  const name = `no-such-template-${rand()}`
  const err = await createMustFail(name)
  assert.match(err?.message ?? '', /not found/i, errorText(err))
})

test(`${P} Template.fromDockerfile: RUN, ENV, WORKDIR, COPY and USER reach the sandbox`, T_BUILD, async () => {
  const alias = uniqueAlias('dockerfile')
  // The SDK turns FROM into `fromImage: "<ref>"` (default e2bdev/base), i.e. a registry pull.
  // Chaining fromTemplate() after the parse replaces it, so the server gets
  // `fromTemplate: "base"` and no fromImage; the steps stay the parsed ones: USER root and
  // WORKDIR / (which the parser always puts first), then the Dockerfile's own.
  // (The SDK splits ENV values on spaces even inside quotes, so the values have none.)
  const template = Template({ fileContextPath: CONTEXT })
    .fromDockerfile(
      [
        'FROM e2bdev/base',
        'ENV GREETING=hello-from-dockerfile DF_MODE=test',
        'WORKDIR /srv/df',
        'COPY hello.txt ./',
        `RUN echo "$GREETING $DF_MODE" > /srv/df/greeting && id -un > /srv/df/run-user && pwd > /srv/df/run-cwd && echo ${NONCE} > /srv/df/nonce`,
        'USER user',
      ].join('\n'),
    )
    .fromTemplate('base')
  const body = JSON.parse(await Template.toJSON(template, false))
  assert.equal(body.fromTemplate, 'base')
  assert.equal(body.fromImage, undefined)
  assert.deepEqual(body.steps.map((s) => s.type), ['USER', 'WORKDIR', 'ENV', 'WORKDIR', 'COPY', 'RUN', 'USER'])

  const created = []
  let sbx
  try {
    await mustBuild(template, alias, { created })
    sbx = await newSandbox({ template: alias, metadata, timeoutMs: 120_000 })
    assert.equal(await sh(sbx, 'cat /srv/df/nonce'), NONCE)
    // RUN ran as the Dockerfile's user (root), in its WORKDIR, with its ENV.
    assert.equal(await sh(sbx, 'cat /srv/df/greeting'), 'hello-from-dockerfile test')
    assert.equal(await sh(sbx, 'cat /srv/df/run-user'), 'root')
    assert.equal(await sh(sbx, 'cat /srv/df/run-cwd'), '/srv/df')
    // COPY to ./ is relative to the WORKDIR; without --chown the owner is the current USER.
    assert.equal(await sbx.files.read('/srv/df/hello.txt'), `${HELLO}\n`)
    assert.equal(await sh(sbx, 'stat -c %U /srv/df/hello.txt'), 'root')
    // The sandbox: the last USER and WORKDIR, and the ENV.
    assert.equal(await sh(sbx, 'whoami'), 'user')
    assert.equal(await sh(sbx, 'pwd'), '/srv/df')
    assert.equal(await sh(sbx, 'echo $GREETING $DF_MODE'), 'hello-from-dockerfile test')
  } finally {
    await sbx?.kill().catch(() => {})
    for (const id of created) await deleteTemplate(id).catch(() => {})
  }
})
