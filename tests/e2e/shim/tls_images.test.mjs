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
import { after, test } from 'node:test'

import { BuildError, Template } from 'e2b'
import { phaseLabel } from './edge_client.mjs'
import { RUN_ID, TLS_CLIENT, env, killTracked, newSandbox, sh } from './helpers.mjs'
import { aliasMaker, build, cachedSteps, deleteTemplate, deleteTrackedTemplates, errorText, mustBuild, rand, showLogs } from './template_builds.mjs'

const P = phaseLabel()

// The first pull of the image (~115 MB of layers) may take a while; builds after it reuse layers.
const T_BUILD = { timeout: 600_000 }
// A build that must fail must do so without hanging on the registry.
const T_FAIL = { timeout: 180_000 }
const FAIL_ABORT_MS = 150_000

const uniqueAlias = aliasMaker('e2e-img')
const metadata = { run: RUN_ID, file: 'tls_images' }
const NONCE = `nonce-${process.pid}-${rand()}`

const registry = () => ({ username: env('COVE_REGISTRY_USER'), password: env('COVE_REGISTRY_PASSWORD') })

after(async () => {
  await killTracked()
  await deleteTrackedTemplates()
})

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
