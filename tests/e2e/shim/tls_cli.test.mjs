// `e2b template list` of npm @e2b/cli (2.10.3, the newest 2.x whose `template list` authenticates
// with E2B_ACCESS_TOKEN) through the TLS edge. The CLI sends `Authorization: Bearer
// $E2B_ACCESS_TOKEN` (and X-API-KEY only if E2B_API_KEY is set, which it is not here) on
// `GET https://api.$E2B_DOMAIN/templates`, with `?teamID=` when E2B_TEAM_ID or --team names one.
// run.sh makes the token with `cove token create --team e2e` (the team of E2B_API_KEY) and passes
// it as COVE_ACCESS_TOKEN; this file runs in the tls-h2 and tls-h1 phases.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, test } from 'node:test'

import { Template } from 'e2b'
import { domain, phaseLabel } from './edge_client.mjs'
import { env } from './helpers.mjs'
import { deleteTemplate, rand } from './template_builds.mjs'

const P = phaseLabel()
const CLI = fileURLToPath(new URL('../node_modules/.bin/e2b', import.meta.url))
// ≤ 20 characters: the CLI's table cuts longer names.
const ALIAS = `e2e-cli-${rand()}`
const T_BUILD = { timeout: 600_000 }
const T_CLI = { timeout: 120_000 }

// The CLI reads ~/.e2b/config.json when present: an empty HOME keeps the host's out of the test.
const home = mkdtempSync(join(tmpdir(), 'cove-e2e-cli-home-'))
let templateId

/**
 * Runs the CLI with only what it needs: E2B_DOMAIN, E2B_ACCESS_TOKEN, NODE_EXTRA_CA_CERTS (no
 * E2B_API_KEY). Resolves {code, stdout, stderr}; never rejects on a non-zero exit.
 */
function cli(args, extraEnv = {}) {
  const childEnv = {
    PATH: process.env.PATH,
    HOME: home,
    E2B_DOMAIN: domain(),
    E2B_ACCESS_TOKEN: env('COVE_ACCESS_TOKEN'),
    NODE_EXTRA_CA_CERTS: env('NODE_EXTRA_CA_CERTS'),
    NO_COLOR: '1',
    ...extraEnv,
  }
  return new Promise((resolve) => {
    execFile(CLI, args, { env: childEnv, timeout: 90_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? err.signal ?? 'error') : 0, stdout, stderr })
    })
  })
}

function show(r) {
  return `exit ${r.code}; stdout: ${r.stdout.slice(0, 2000)}; stderr: ${r.stderr.slice(0, 2000)}`
}

/** `e2b template list --format json`, parsed; fails the test unless the CLI succeeds. */
async function listJson(extraEnv = {}) {
  const r = await cli(['template', 'list', '--format', 'json'], extraEnv)
  assert.equal(r.code, 0, `e2b template list --format json: ${show(r)}`)
  let list
  assert.doesNotThrow(() => (list = JSON.parse(r.stdout)), `the CLI printed no JSON: ${show(r)}`)
  assert.ok(Array.isArray(list), `not an array: ${r.stdout}`)
  return list
}

/** Raw API call through the edge: {status, body}. */
async function api(method, path, headers) {
  const res = await fetch(`https://api.${domain()}${path}`, {
    method,
    headers,
    signal: AbortSignal.timeout(60_000),
  })
  const text = await res.text()
  let body = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: res.status, body }
}

before(async () => {
  const info = await Template.build(
    Template().fromTemplate('base').runCmd('echo hi > /opt/hi', { user: 'root' }),
    ALIAS,
    { signal: AbortSignal.timeout(540_000) },
  )
  templateId = info.templateId
  assert.ok(templateId, `Template.build returned no template id: ${JSON.stringify(info)}`)
}, T_BUILD)

after(async () => {
  try {
    if (templateId) await deleteTemplate(templateId)
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
})

test(`${P} e2b template list (JSON) shows the built template, as the team's API key sees the list`, T_CLI, async () => {
  const list = await listJson()
  const mine = list.find((t) => t.templateID === templateId)
  assert.ok(mine, `template ${templateId} is not in the CLI's list: ${JSON.stringify(list).slice(0, 2000)}`)
  assert.ok(mine.aliases.includes(ALIAS), `aliases of ${templateId}: ${JSON.stringify(mine.aliases)}`)
  assert.equal(mine.public, false, 'a team-built template is private')

  // The token is team e2e's: the CLI sees exactly what that team's API key sees.
  const byKey = await api('GET', '/templates', { 'X-API-Key': env('E2B_API_KEY') })
  assert.equal(byKey.status, 200, JSON.stringify(byKey.body))
  const ids = (l) => l.map((t) => t.templateID).sort()
  assert.deepEqual(ids(list), ids(byKey.body), 'the token and the API key list different templates')
})

test(`${P} e2b template list (table) names the template and its alias`, T_CLI, async () => {
  const r = await cli(['template', 'list'])
  assert.equal(r.code, 0, show(r))
  assert.ok(r.stdout.includes(templateId), `no ${templateId} in the table: ${show(r)}`)
  assert.ok(r.stdout.includes(ALIAS), `no ${ALIAS} in the table: ${show(r)}`)
})

test(`${P} the CLI's team: /teams names the token's team; E2B_TEAM_ID of another team is refused`, T_CLI, async () => {
  const teams = await api('GET', '/teams', { Authorization: `Bearer ${env('COVE_ACCESS_TOKEN')}` })
  assert.equal(teams.status, 200, JSON.stringify(teams.body))
  assert.equal(teams.body.length, 1, JSON.stringify(teams.body))
  const [team] = teams.body
  assert.equal(team.name, 'e2e')
  assert.equal(team.isDefault, true)
  assert.equal(team.apiKey, undefined, 'the API key is never shown again')

  const list = await listJson({ E2B_TEAM_ID: team.teamID })
  assert.ok(list.some((t) => t.templateID === templateId), 'E2B_TEAM_ID of the own team lists the template')

  const other = await cli(['template', 'list', '--format', 'json'], { E2B_TEAM_ID: 'team_not_this_one' })
  assert.notEqual(other.code, 0, `another team's templates were listed: ${show(other)}`)
  assert.match(other.stderr, /\[403\]/, show(other))
})

test(`${P} an invalid access token makes the CLI fail with the shim's 401`, T_CLI, async () => {
  const bad = `sk_e2b_${'0'.repeat(40)}`
  const r = await cli(['template', 'list', '--format', 'json'], { E2B_ACCESS_TOKEN: bad })
  assert.notEqual(r.code, 0, `the CLI succeeded with an invalid token: ${show(r)}`)
  assert.match(r.stderr, /\[401\].*Invalid access token/, show(r))
  assert.ok(!r.stdout.includes(templateId), 'templates were printed anyway')
  assert.ok(!r.stderr.includes(bad) && !r.stdout.includes(bad), 'the token was echoed')
})

test(`${P} after DELETE /templates/<id> the CLI no longer lists it`, T_CLI, async () => {
  assert.equal(await deleteTemplate(templateId), 204)
  const deleted = templateId
  templateId = undefined
  const list = await listJson()
  assert.ok(!list.some((t) => t.templateID === deleted), `${deleted} is still listed`)
})
