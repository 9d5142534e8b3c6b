#!/usr/bin/env bash
# End-to-end tests: the unchanged npm `e2b` SDK (E2B_DEBUG mode) against build/bin/cove-agent,
# running as PID 1 of a sandbox.sh sandbox over the Debian base rootfs, listening on localhost:49983.
#
# Usage: tests/e2e/run.sh            (from any directory; needs root, a built agent and Node >= 20)
# Env:   COVE_AGENT        agent binary        (default: <repo>/build/bin/cove-agent)
#        COVE_DESCRIPTORS  FileDescriptorSet   (default: <repo>/build/proto/envd.desc)
# Exit status: non-zero if anything fails. node's TAP summary ("# pass N" / "# fail N") ends the output.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
agent=${COVE_AGENT:-$repo/build/bin/cove-agent}
port=49983
base=http://127.0.0.1:$port

log() { printf 'e2e: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ -x $agent ]] || die "agent binary not found or not executable: $agent (build first)"
command -v node >/dev/null || die "node not found"
command -v curl >/dev/null || die "curl not found"

# 1. Dependencies, from the committed lockfile. npm writes node_modules/.package-lock.json on install.
stamp=$here/node_modules/.package-lock.json
if [[ ! -f $stamp || $here/package-lock.json -nt $stamp ]]; then
  log "npm ci"
  (cd "$here" && npm ci --no-audit --no-fund >&2)
fi

# 2. Service descriptors for the binary-codec test.
export COVE_DESCRIPTORS=${COVE_DESCRIPTORS:-$repo/build/proto/envd.desc}
[[ -f $COVE_DESCRIPTORS ]] || die "descriptor set not found: $COVE_DESCRIPTORS (the build makes build/proto/envd.desc)"

# 3. Rootfs (cached; progress goes to stderr, the path is the only stdout).
rootfs=$("$repo/rootfs-builder/build-base.sh")
[[ -d $rootfs ]] || die "build-base.sh printed no rootfs directory: '$rootfs'"

# Something else answering on the port would silently receive every test request.
if curl -s -o /dev/null --max-time 1 "$base/health"; then
  die "port $port is already serving HTTP; stop whatever listens there first"
fi

# 4. Sandbox up, and always down again.
state=$(mktemp -d /tmp/cove-e2e.XXXXXX)
cleanup() {
  local rc=$?
  trap - EXIT
  if ((rc != 0)) && [[ -f $state/agent.log ]]; then
    log "---- last lines of the agent log ($state/agent.log)"
    tail -n 100 "$state/agent.log" >&2 || true
  fi
  # down kills the sandbox, unmounts and removes the state dir.
  if ! "$here/sandbox.sh" down "$state" >&2; then
    log "sandbox.sh down failed; state left in $state"
    ((rc)) || rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT
log "sandbox up: rootfs $rootfs, agent $agent, state $state"
"$here/sandbox.sh" up "$rootfs" "$agent" "$state" -port "$port" >&2

# 5. Wait for the agent: GET /health -> 204, at most 10 s.
deadline=$((SECONDS + 10))
until [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$base/health" || true) == 204 ]]; do
  ((SECONDS < deadline)) || die "agent did not answer GET /health with 204 within 10 s"
  sleep 0.1
done

# 6. Play the orchestrator once (the SDK never calls /init in debug mode).
init='{"envVars":{"COVE_E2E_GLOBAL":"from-init","COVE_E2E_OVERRIDE":"init"},"defaultUser":"user"}'
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST \
  -H 'Content-Type: application/json' --data "$init" "$base/init" || true)
[[ $code == 204 ]] || die "POST /init answered $code, expected 204"

# 7. The tests, one file at a time. Files are listed by bash: Node 20's --test takes no globs.
shopt -s nullglob
tests=("$here"/*.test.mjs)
((${#tests[@]})) || die "no test files in $here"
log "running ${#tests[@]} test files"
E2B_DEBUG=true timeout --kill-after=10 300 \
  env -u E2B_SANDBOX_URL -u E2B_API_URL -u E2B_DOMAIN -u E2B_API_KEY \
  node --test --test-reporter=tap --test-concurrency=1 --test-force-exit "${tests[@]}"
