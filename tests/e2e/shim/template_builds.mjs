// Template builds for the e2e files that build templates through the TLS edge: Template.build()
// with its logs collected, and the ids of the templates built, so that after() can delete whatever a
// test left behind (the state directory outlives a run.sh phase).
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'

import { Template } from 'e2b'
import { domain } from './edge_client.mjs'
import { env } from './helpers.mjs'

// Under the 600 s test timeout the build tests use, so a hung build fails with its logs.
const BUILD_ABORT_MS = 540_000

export const rand = () => randomBytes(4).toString('hex')

/** A function making aliases unique per process: `${prefix}-${what}-<pid>-<random>`. */
export const aliasMaker = (prefix) => (what) => `${prefix}-${what}-${process.pid}-${rand()}`

// Template ids the importing file made; deleteTrackedTemplates() deletes whatever a test did not.
const templateIds = new Set()

/** For the file's after(): deletes every template built through build() and not deleted since. */
export async function deleteTrackedTemplates() {
  await Promise.all([...templateIds].map((id) => deleteTemplate(id).catch(() => 0)))
}

/** DELETE /templates/<id> (the SDK has no template delete); returns the HTTP status. */
export async function deleteTemplate(id) {
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
 * Template.build() with the build logs collected; the other `options` go to Template.build.
 * Resolves {info, ms, messages}; a rejection is the SDK's error with `buildLogs` added. The
 * template id is taken from the SDK's own "Template created with ID" log line as soon as it
 * appears, so a failed build is cleaned up too: it goes into `created` (the caller's, to delete in
 * its finally) and into the tracked ids (for deleteTrackedTemplates).
 */
export async function build(template, alias, { created = [], abortMs = BUILD_ABORT_MS, ...options } = {}) {
  const messages = []
  const started = Date.now()
  try {
    const info = await Template.build(template, alias, {
      ...options,
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
export async function mustBuild(template, alias, options = {}) {
  try {
    return await build(template, alias, options)
  } catch (e) {
    throw new assert.AssertionError({
      message: `Template.build('${alias}') failed: ${errorText(e)}\n${showLogs(e?.buildLogs ?? [])}`,
    })
  }
}

/** An error's class and message, and the cause of a failed fetch (ECONNREFUSED, a TLS error ...). */
export const errorText = (e) =>
  `${e?.constructor?.name ?? typeof e}: ${e?.message}${e?.cause ? ` (${e.cause.code ?? e.cause.message})` : ''}`

export const showLogs = (messages) => `build logs:\n  ${messages.join('\n  ')}`

/**
 * For each step (1-based, as E2B numbers them: `CACHED [builder i/N] RUN ...`), whether a build
 * log line says it came from the layer cache: the line has CACHED, "i/N" and the step's type.
 */
export function cachedSteps(messages, steps) {
  return steps.map((step, i) => {
    const counter = new RegExp(`(^|\\D)${i + 1}/${steps.length}(\\D|$)`)
    return messages.some((m) => /\bCACHED\b/.test(m) && counter.test(m) && m.includes(step.type))
  })
}
