// Templates from a registry image through the TLS edge with the official npm `e2b` 2.51.0:
// Template().fromImage(ref, {username, password}) pulls from the local test registry that run.sh
// starts (registry.sh: Debian's docker-registry on 127.0.0.1, HTTPS with its own CA, which the
// shim trusts through `registry_ca`; htpasswd Basic auth). The image is the base rootfs in four
// layers: the rootfs; /opt/cove-image/{kept,gone,replaced/old}; whiteouts of /etc/motd and
// /opt/cove-image/gone; /opt/cove-image/replaced made opaque with only "new". Its config has
// Env IMAGE_MARKER=from-registry. It is pushed as an OCI manifest (COVE_REGISTRY_IMAGE), a Docker
// schema 2 manifest (COVE_REGISTRY_IMAGE_DOCKER) and an OCI index whose first entry is linux/arm64
// with IMAGE_MARKER=wrong-platform (COVE_REGISTRY_IMAGE_LIST).
// run.sh runs this file in the tls-h2 and tls-h1 phases against the same state directory (and
// registry), so aliases and the first RUN are unique per process.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, test } from 'node:test'

import { BuildError, Template } from 'e2b'
import { domain, phaseLabel } from './edge_client.mjs'
import { RUN_ID, TLS_CLIENT, env, killTracked, newSandbox, sh } from './helpers.mjs'

const P = phaseLabel()

// The first pull of the image (~115 MB of layers) may take a while; builds after it reuse layers.
const T_BUILD = { timeout: 600_000 }
const BUILD_ABORT_MS = 540_000
// A build that must fail must do so without hanging on the registry.
const T_FAIL = { timeout: 180_000 }
const FAIL_ABORT_MS = 150_000

const rand = () => randomBytes(4).toString('hex')
const uniqueAlias = (what) => `e2e-img-${what}-${process.pid}-${rand()}`
const metadata = { run: RUN_ID, file: 'tls_images' }
const NONCE = `nonce-${process.pid}-${rand()}`

const registry = () => ({ username: env('COVE_REGISTRY_USER'), password: env('COVE_REGISTRY_PASSWORD') })

// Template ids this file made; after() deletes whatever a test did not.
const templateIds = new Set()

after(async () => {
  await killTracked()
  await Promise.all([...templateIds].map((id) => deleteTemplate(id).catch(() => 0)))
})

/** DELETE /templates/<id> (the SDK has no template delete); returns the HTTP status. */
async function deleteTemplate(id) {
  const res = await fetch(`https://api.${domain()}/templates/${encodeURIComponent(id)}`, {
    method: 'DELETE',
    headers: { 'X-API-Key': env('E2B_API_KEY') },
    signal: AbortSignal.timeout(60_000),
  })
  await res.arrayBuffer()
  if (res.status === 204 || res.status === 404) templateIds.delete(id)
  return res.status
}

/**
 * Template.build() with the build logs collected. Resolves {info, ms, messages}; a rejection is
 * the SDK's error with `buildLogs` added. The template id comes from the SDK's "Template created
 * with ID" log line, so a failed build is deleted too (`created`, and templateIds for after()).
 */
async function build(template, alias, { created = [], abortMs = BUILD_ABORT_MS } = {}) {
  const messages = []
  const started = Date.now()
  try {
    const info = await Template.build(template, alias, {
      signal: AbortSignal.timeout(abortMs),
      onBuildLogs: (entry) => {
        messages.push(entry.message)
        const m = /^Template created with ID: ([^,\s]+), Build ID: /.exec(entry.message)
        if (m) {
          templateIds.add(m[1])
          created.push(m[1])
        }
      },
    })
    return { info, ms: Date.now() - started, messages }
  } catch (e) {
    e.buildLogs = messages
    throw e
  }
}

/** build() that must succeed: a failure is an AssertionError with the build logs. */
async function mustBuild(template, alias, options = {}) {
  try {
    return await build(template, alias, options)
  } catch (e) {
    throw new assert.AssertionError({
      message: `Template.build('${alias}') failed: ${errorText(e)}\n${showLogs(e?.buildLogs ?? [])}`,
    })
  }
}

/** build() that must fail with a BuildError; returns it (templates it made are deleted). */
async function mustFailBuild(template, what) {
  const created = []
  try {
    const err = await build(template, uniqueAlias('fail'), { created, abortMs: FAIL_ABORT_MS }).then(
      ({ info }) => assert.fail(`Template.build ${what} succeeded (template ${info.templateId})`),
      (e) => e,
    )
    assert.ok(
      err instanceof BuildError,
      `Template.build ${what}: expected BuildError, got ${errorText(err)}; ${showLogs(err?.buildLogs ?? [])}`,
    )
    return err
  } finally {
    for (const id of created) await deleteTemplate(id).catch(() => {})
  }
}

const errorText = (e) => `${e?.constructor?.name ?? typeof e}: ${e?.message}${e?.cause ? ` (${e.cause.code ?? e.cause.message})` : ''}`
const showLogs = (messages) => `build logs:\n  ${messages.join('\n  ')}`

/** For each step (1-based "i/N" as E2B numbers them), whether a log line says it was CACHED. */
function cachedSteps(messages, steps) {
  return steps.map((step, i) => {
    const counter = new RegExp(`(^|\\D)${i + 1}/${steps.length}(\\D|$)`)
    return messages.some((m) => /\bCACHED\b/.test(m) && counter.test(m) && m.includes(step.type))
  })
}

/** What every sandbox from the test image must show, whichever manifest form it was pulled as. */
async function assertImageContent(sbx) {
  // The image's ENV reaches the sandbox (and the arm64 entry of the index was not taken).
  assert.equal(await sh(sbx, 'echo "$IMAGE_MARKER"'), 'from-registry', 'IMAGE_MARKER from the image config')
  // Layer 3's whiteouts removed a file of layer 1 and one of layer 2.
  assert.equal(await sh(sbx, 'test -e /etc/motd && echo present || echo absent'), 'absent', '/etc/motd (whiteout)')
  assert.equal(await sh(sbx, 'test -e /opt/cove-image/gone && echo present || echo absent'), 'absent', 'gone (whiteout)')
  assert.equal(await sh(sbx, 'ls -A /opt/cove-image | tr "\\n" " "'), 'kept replaced ', 'ls /opt/cove-image')
  assert.equal(await sh(sbx, 'cat /opt/cove-image/kept'), 'kept')
  // Layer 4's opaque marker hid what layer 2 put in replaced/; the marker itself is not a file.
  assert.equal(await sh(sbx, 'ls -A /opt/cove-image/replaced | tr "\\n" " "'), 'new ', 'opaque directory')
  assert.equal(await sh(sbx, 'cat /opt/cove-image/replaced/new'), 'new')
  assert.equal(await sh(sbx, 'find / -xdev -name ".wh.*" 2>/dev/null | head -n 5'), '', 'whiteout files left in the tree')
  // It is the Debian tree the image was made from.
  assert.match(await sh(sbx, 'cat /etc/os-release'), /^ID=debian$/m)
  assert.match(await sh(sbx, 'cat /etc/os-release'), /^VERSION_ID="12"$/m)
}

// ---- The OCI-manifest image with credentials (tests 1 and 2 share its first build) -----------

const OCI_ALIAS = uniqueAlias('oci')

function ociTemplate() {
  return Template()
    .fromImage(env('COVE_REGISTRY_IMAGE'), registry())
    .runCmd(`echo built > /srv/built && echo ${NONCE} > /srv/nonce && echo "$IMAGE_MARKER" > /srv/build-env`, { user: 'root' })
}

let firstOciBuild
function ociBuild() {
  firstOciBuild ??= mustBuild(ociTemplate(), OCI_ALIAS)
  return firstOciBuild
}

test(`${P} fromImage with credentials (OCI manifest): RUN, image ENV, whiteouts, opaque dir, Debian`, T_BUILD, async () => {
  assert.ok(TLS_CLIENT, 'E2B_DOMAIN is not set: run this file through run.sh')
  const body = JSON.parse(await Template.toJSON(ociTemplate(), false))
  assert.equal(body.fromImage, env('COVE_REGISTRY_IMAGE'))
  assert.deepEqual(body.fromImageRegistry, { type: 'registry', ...registry() }, 'the SDK sends the credentials')

  const { info, messages } = await ociBuild()
  assert.equal(info.name, OCI_ALIAS)
  assert.ok(info.templateId && info.buildId, `build info: ${JSON.stringify(info)}`)
  // The credentials never show up in the build logs.
  assert.ok(!messages.some((m) => m.includes(registry().password)), `the registry password is in the build logs; ${showLogs(messages)}`)

  const sbx = await newSandbox({ template: OCI_ALIAS, metadata, timeoutMs: 120_000 })
  try {
    assert.equal(await sh(sbx, 'cat /srv/built'), 'built')
    assert.equal(await sh(sbx, 'cat /srv/nonce'), NONCE, 'this build, not another one')
    // The RUN step saw the image's ENV too.
    assert.equal(await sh(sbx, 'cat /srv/build-env'), 'from-registry', 'IMAGE_MARKER during RUN')
    await assertImageContent(sbx)
    const sbxInfo = await sbx.getInfo()
    assert.equal(sbxInfo.templateId, info.templateId, `getInfo: ${JSON.stringify(sbxInfo)}`)
  } finally {
    await sbx.kill().catch(() => {})
  }
})

test(`${P} fromImage again with the same steps: every step CACHED`, T_BUILD, async () => {
  const first = await ociBuild()
  const template = ociTemplate()
  const steps = JSON.parse(await Template.toJSON(template, false)).steps
  const second = await mustBuild(template, OCI_ALIAS)
  assert.equal(second.info.templateId, first.info.templateId, 'the same alias names the same template')
  assert.notEqual(second.info.buildId, first.info.buildId, 'a rebuild is a new build')
  const cached = cachedSteps(second.messages, steps)
  const missed = steps.flatMap((s, i) => (cached[i] ? [] : [`${i + 1}/${steps.length} ${s.type}`]))
  assert.deepEqual(missed, [], `steps without a CACHED log line; ${showLogs(second.messages)}`)
  assert.ok(second.ms < first.ms, `the cached build took ${second.ms} ms, the first ${first.ms} ms`)

  const sbx = await newSandbox({ template: OCI_ALIAS, metadata, timeoutMs: 120_000 })
  try {
    assert.equal(await sh(sbx, 'cat /srv/nonce'), NONCE)
    assert.equal(await sh(sbx, 'echo "$IMAGE_MARKER"'), 'from-registry')
  } finally {
    await sbx.kill().catch(() => {})
  }
})

// ---- The other manifest forms of the same image ----------------------------------------------

for (const [what, variable] of [
  ['a Docker schema 2 manifest', 'COVE_REGISTRY_IMAGE_DOCKER'],
  ['an OCI index (linux/amd64 is its second entry)', 'COVE_REGISTRY_IMAGE_LIST'],
]) {
  test(`${P} fromImage of ${what}: the same tree and ENV`, T_BUILD, async () => {
    const alias = uniqueAlias(variable.endsWith('LIST') ? 'list' : 'docker')
    const created = []
    const template = Template()
      .fromImage(env(variable), registry())
      .runCmd(`echo ${NONCE}-${variable} > /srv/nonce`, { user: 'root' })
    let sbx
    try {
      await mustBuild(template, alias, { created })
      sbx = await newSandbox({ template: alias, metadata, timeoutMs: 120_000 })
      assert.equal(await sh(sbx, 'cat /srv/nonce'), `${NONCE}-${variable}`)
      await assertImageContent(sbx)
    } finally {
      await sbx?.kill().catch(() => {})
      for (const id of created) await deleteTemplate(id).catch(() => {})
    }
  })
}

// ---- Failures ---------------------------------------------------------------------------------

test(`${P} fromImage with a wrong password, and without credentials: BuildError, no secret in it`, T_FAIL, async () => {
  const wrong = `wrong-${rand()}`
  const image = env('COVE_REGISTRY_IMAGE')
  const err = await mustFailBuild(
    Template().fromImage(image, { username: registry().username, password: wrong }).runCmd('true'),
    'with a wrong password',
  )
  const logs = showLogs(err.buildLogs ?? [])
  assert.match(err.message, /unauthori[sz]ed|credentials|401|authenticat/i, `message: ${err.message}; ${logs}`)
  for (const secret of [wrong, registry().password]) {
    assert.ok(!err.message.includes(secret), `the error message shows a password: ${err.message}`)
    assert.ok(!(err.buildLogs ?? []).some((m) => m.includes(secret)), `the build logs show a password; ${logs}`)
  }

  // The registry refuses anonymous pulls too.
  const anon = await mustFailBuild(Template().fromImage(image).runCmd('true'), 'without credentials')
  assert.match(anon.message, /unauthori[sz]ed|credentials|401|authenticat/i, `message: ${anon.message}; ${showLogs(anon.buildLogs ?? [])}`)
})

test(`${P} fromImage of an image the registry does not have: BuildError`, T_FAIL, async () => {
  const missingRepo = `${env('COVE_REGISTRY')}/cove/no-such-image-${rand()}:1`
  const missingTag = `${env('COVE_REGISTRY')}/cove/test:no-such-tag-${rand()}`
  for (const image of [missingRepo, missingTag]) {
    const err = await mustFailBuild(Template().fromImage(image, registry()).runCmd('true'), `of ${image}`)
    assert.match(
      err.message,
      /not found|unknown|404|does not exist|no such/i,
      `message for ${image}: ${err.message}; ${showLogs(err.buildLogs ?? [])}`,
    )
    assert.ok(!err.message.includes(registry().password), `the error message shows the password: ${err.message}`)
  }
})
