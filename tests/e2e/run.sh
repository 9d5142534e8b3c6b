#!/usr/bin/env bash
# End-to-end tests: the unchanged npm `e2b` SDK (E2B_DEBUG mode) against build/bin/cove-agent,
# running as PID 1 of sandbox.sh sandboxes over the Debian base rootfs. Two sandboxes:
#   localhost:49983  the SDK's debug target; /init {envVars, defaultUser: user}, no access token
#   127.0.0.1:49984  a "secure" one: /init {accessToken, defaultUser: user}, reached with plain fetch
#
# Usage: tests/e2e/run.sh [NAME...]  (from any directory; needs root, a built agent and Node >= 20)
#        NAME: run only <NAME>.test.mjs (e.g. `files watch`); default: every *.test.mjs
# Env:   COVE_AGENT        agent binary        (default: <repo>/build/bin/cove-agent)
#        COVE_DESCRIPTORS  FileDescriptorSet   (default: <repo>/build/proto/envd.desc)
# The tests get COVE_AGENT_PID (host pid of the first sandbox's agent, for RSS), COVE_SECURE_URL
# and COVE_SECURE_TOKEN (the second sandbox's base URL and access token).
# Exit status: non-zero if anything fails. node's TAP summary ("# pass N" / "# fail N") ends the output.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
agent=${COVE_AGENT:-$repo/build/bin/cove-agent}
port=49983
base=http://127.0.0.1:$port
secure_port=49984
secure_base=http://127.0.0.1:$secure_port

log() { printf 'e2e: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=lib.sh
. "$here/lib.sh"

[[ -x $agent ]] || die "agent binary not found or not executable: $agent (build first)"
command -v node >/dev/null || die "node not found"
command -v curl >/dev/null || die "curl not found"

# 1. Dependencies, from the committed lockfile. npm writes node_modules/.package-lock.json on install.
e2e_npm_ci_if_stale "$here"

# 2. Service descriptors for the binary-codec test.
export COVE_DESCRIPTORS=${COVE_DESCRIPTORS:-$repo/build/proto/envd.desc}
[[ -f $COVE_DESCRIPTORS ]] || die "descriptor set not found: $COVE_DESCRIPTORS (the build makes build/proto/envd.desc)"

# 3. Rootfs (cached; progress goes to stderr, the path is the only stdout).
rootfs=$("$repo/rootfs-builder/build-base.sh")
[[ -d $rootfs ]] || die "build-base.sh printed no rootfs directory: '$rootfs'"

# Something else answering on a port would silently receive every test request.
for b in "$base" "$secure_base"; do
  if curl -s -o /dev/null --max-time 1 "$b/health"; then
    die "$b is already serving HTTP; stop whatever listens there first"
  fi
done

# 4. Sandboxes up, and always down again.
state=$(mktemp -d /tmp/cove-e2e.XXXXXX)
secure_state=$(mktemp -d /tmp/cove-e2e-secure.XXXXXX)
cleanup() {
  local rc=$? s
  trap - EXIT
  for s in "$state" "$secure_state"; do
    if ((rc != 0)) && [[ -f $s/agent.log ]]; then
      log "---- last lines of the agent log ($s/agent.log)"
      tail -n 100 "$s/agent.log" >&2 || true
    fi
    # down kills the sandbox, unmounts and removes the state dir.
    if ! "$here/sandbox.sh" down "$s" >&2; then
      log "sandbox.sh down failed; state left in $s"
      ((rc)) || rc=1
    fi
  done
  exit "$rc"
}
trap cleanup EXIT
log "sandbox up: rootfs $rootfs, agent $agent, state $state"
"$here/sandbox.sh" up "$rootfs" "$agent" "$state" -port "$port" >&2
log "secure sandbox up: state $secure_state"
"$here/sandbox.sh" up "$rootfs" "$agent" "$secure_state" -port "$secure_port" >&2

# 5. Wait for the agents: GET /health -> 204, at most 10 s.
deadline=$((SECONDS + 10))
for b in "$base" "$secure_base"; do
  until [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$b/health" || true) == 204 ]]; do
    ((SECONDS < deadline)) || die "agent at $b did not answer GET /health with 204 within 10 s"
    sleep 0.1
  done
done

# 6. Play the orchestrator once per sandbox (the SDK never calls /init in debug mode).
init() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST \
    -H 'Content-Type: application/json' --data "$2" "$1/init" || true)
  [[ $code == 204 ]] || die "POST $1/init answered $code, expected 204"
}
init "$base" '{"envVars":{"COVE_E2E_GLOBAL":"from-init","COVE_E2E_OVERRIDE":"init"},"defaultUser":"user"}'
secure_token=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
[[ $secure_token =~ ^[0-9a-f]{64}$ ]] || die "could not make an access token"
init "$secure_base" "{\"accessToken\":\"$secure_token\",\"defaultUser\":\"user\"}"

COVE_AGENT_PID=$(<"$state/pid")   # the sandbox's PID 1 is the agent (sandbox.sh execs it)
export COVE_AGENT_PID COVE_SECURE_URL=$secure_base COVE_SECURE_TOKEN=$secure_token

# 7. The tests, one file at a time. Files are listed by bash: Node 20's --test takes no globs.
tests=()
e2e_test_files "$here" "$@"
log "running ${#tests[@]} test files"
E2B_DEBUG=true timeout --kill-after=10 300 \
  env -u E2B_SANDBOX_URL -u E2B_API_URL -u E2B_DOMAIN -u E2B_API_KEY \
  node --test --test-reporter=tap --test-concurrency=1 --test-force-exit "${tests[@]}"
