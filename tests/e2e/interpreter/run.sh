#!/usr/bin/env bash
# End-to-end tests of the code interpreter (issue 7): the unchanged npm `@e2b/code-interpreter`
# (pinned in ../package.json) against a running Cove shim that has the code-interpreter-v1
# template. Starts nothing and builds nothing: the environment says where the shim is, as a user's
# would. Each test file creates its own sandbox(es) and kills them at the end.
#
# Usage: tests/e2e/interpreter/run.sh [NAME...]   (NAME: run only <NAME>.test.mjs)
# Env (passed to the tests unchanged), one of:
#   TLS edge    E2B_DOMAIN, E2B_API_KEY, NODE_EXTRA_CA_CERTS  (e.g. `set -a; . /var/lib/cove/client.env`)
#   plain HTTP  E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY
#   COVE_E2E_INTERPRETER_TIMEOUT  seconds for the whole node run (default 600)
# Exit status: non-zero if anything fails. node's TAP summary ("# pass N" / "# fail N") ends the output.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
e2e=$(cd "$here/.." && pwd)
run_timeout=${COVE_E2E_INTERPRETER_TIMEOUT:-600}

log() { printf 'e2e-interpreter: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=../lib.sh
. "$e2e/lib.sh"

command -v node >/dev/null || die "node not found"
[[ $run_timeout =~ ^[1-9][0-9]*$ ]] || die "COVE_E2E_INTERPRETER_TIMEOUT must be a positive number of seconds"
[[ -n ${E2B_API_KEY:-} ]] || die "E2B_API_KEY is not set"
if [[ -n ${E2B_DOMAIN:-} ]]; then
  [[ -z ${E2B_API_URL:-}${E2B_SANDBOX_URL:-} ]] ||
    die "set either E2B_DOMAIN (TLS edge) or E2B_API_URL + E2B_SANDBOX_URL (plain HTTP), not both"
  mode="TLS edge, domain $E2B_DOMAIN"
elif [[ -n ${E2B_API_URL:-} && -n ${E2B_SANDBOX_URL:-} ]]; then
  mode="plain HTTP, API $E2B_API_URL, sandboxes $E2B_SANDBOX_URL"
else
  die "set E2B_DOMAIN (TLS edge) or E2B_API_URL and E2B_SANDBOX_URL (plain HTTP)"
fi
[[ ${E2B_DEBUG:-} != [Tt][Rr][Uu][Ee] ]] || die "E2B_DEBUG must not be true: these tests go through a shim"

# The SDKs live in the parent suite's node_modules (Node resolves them upwards from here).
e2e_npm_ci_if_stale "$e2e" @e2b/code-interpreter

tests=()
e2e_test_files "$here" "$@"

log "running ${#tests[@]} test files ($mode)"
exec timeout --kill-after=10 "$run_timeout" \
  node --test --test-reporter=tap --test-concurrency=1 --test-force-exit "${tests[@]}"
