#!/usr/bin/env bash
# The one-command set-up, as a user meets it: `make up` (tools/up.sh) reaches its printed state,
# then the README's quick start, pasted as written, creates a sandbox through the TLS edge with
# nothing but the three variables of client.env.
#
# When a `make up` shim already runs (its state dir lock is held), the quick start runs against it;
# otherwise this starts one, and stops it (by pid) at the end. What make up writes (/etc/cove,
# /var/lib/cove, the cove0 bridge) stays, as after a real `make up`: the next one reuses it.
#
# Env: BUILD  build directory (default build)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
log() { printf 'e2e-up: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
((EUID == 0)) || die "needs root, as make up does"

state=/var/lib/cove
work=$(mktemp -d /var/tmp/cove-e2e-up.XXXXXX)
shim_pid=
cleanup() {
  if [[ -n $shim_pid ]] && kill -0 "$shim_pid" 2>/dev/null; then
    kill -TERM "$shim_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$shim_pid" 2>/dev/null || break; sleep 0.2; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The quick start: the first fenced block after the README's "## Quick start" heading.
snippet=$(awk '/^## Quick start/ { q = 1; next } q && /^```/ { if (f) exit; f = 1; next } f { print }' "$repo/README.md")
[[ -n $snippet ]] || die "README.md has no fenced block under '## Quick start'"

running=0
if [[ -e $state/shim.lock ]] && ! flock -n "$state/shim.lock" true; then
  running=1
  log "a make up shim already runs on $state; using it"
else
  log "starting make up (its output: $work/up.log)"
  (cd "$repo" && exec setsid env BUILD="${BUILD:-build}" tools/up.sh) </dev/null >"$work/up.log" 2>&1 &
  shim_pid=$!
  deadline=$((SECONDS + 1800))  # a fresh machine builds the built-in templates here
  until grep -q '^up: ready' "$work/up.log"; do
    kill -0 "$shim_pid" 2>/dev/null || { tail -n 30 "$work/up.log" >&2; die "make up exited before it was ready"; }
    ((SECONDS < deadline)) || { tail -n 30 "$work/up.log" >&2; die "make up did not get ready in 1800 s"; }
    sleep 0.5
  done
  # The printed state: how to use it, and the edge's listeners.
  grep -q "set -a; . $state/client.env; set +a" "$work/up.log" || die "make up did not print how to use client.env"
  grep -q '^cove: tls listening on 127.0.0.1:443 ' "$work/up.log" || die "make up's shim does not listen on 127.0.0.1:443"
  grep -q '^cove: tls listening on \[::1\]:443 ' "$work/up.log" || die "make up's shim does not listen on [::1]:443"
fi

env_file=$state/client.env
[[ -f $env_file ]] || die "no $env_file"
[[ $(stat -c %a "$env_file") == 600 ]] || die "$env_file is not 0600"
mapfile -t names < <(sed -n 's/=.*//p' "$env_file" | sort)
[[ "${names[*]}" == "E2B_API_KEY E2B_DOMAIN NODE_EXTRA_CA_CERTS" ]] || die "client.env holds ${names[*]}, not the three variables"

# Pasted as written, in a shell without any E2B_* or proxy settings of ours.
log "running the README quick start"
out=$(env -i PATH="$PATH" HOME="$work" TERM=dumb bash -euo pipefail -c "$snippet" 2>"$work/snippet.err") || {
  cat "$work/snippet.err" >&2
  die "the quick start failed"
}
[[ $out == *"hello from cove"* ]] || { cat "$work/snippet.err" >&2; die "the quick start printed: $out"; }
log "ok: make up $( ((running)) && echo "(already running)" || echo "started") and the README quick start printed 'hello from cove'"

# The code interpreter through the same edge, on the code-interpreter-v1 template make up built:
# the unchanged npm @e2b/code-interpreter with nothing but client.env's three variables.
log "running the code interpreter tests (npm @e2b/code-interpreter through the TLS edge)"
env -i PATH="$PATH" HOME="$work" TERM=dumb bash -c 'set -a; . "$1"; set +a; exec "$2"' _ "$env_file" \
  "$repo/tests/e2e/interpreter/run.sh" || die "the code interpreter tests failed"
log "ok: the code interpreter tests passed"
