// What a user does inside a real sandbox, through the shim's plain-HTTP data plane (E2B_API_URL
// and E2B_SANDBOX_URL): identity, commands, files, PTY and directory watches. One sandbox for the
// whole file. The flows themselves are in user_flows.mjs (tls_flows.test.mjs runs them through
// the TLS edge).
import { after } from 'node:test'

import { RUN_ID, killTracked, newSandbox } from './helpers.mjs'
import { describeUserFlows } from './user_flows.mjs'

after(killTracked)

let sandboxPromise
function sandbox() {
  sandboxPromise ??= newSandbox({ metadata: { run: RUN_ID, file: 'flows' }, timeoutMs: 600_000 })
  return sandboxPromise
}

describeUserFlows(sandbox)
