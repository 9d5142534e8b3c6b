# shellcheck shell=bash
# Shared by run.sh and shimctl.sh (sourced, not run): starting and stopping `cove serve`.
#
# Needs: COVE_BIN (the cove binary), COVE_CONFIG (its config), COVE_E2E_STATE (the state dir;
# the shim's log is $COVE_E2E_STATE/shim.log, its pid $COVE_E2E_STATE/shim.pid).

log() { printf 'e2e-shim: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Start time (clock ticks since boot) of a pid, empty if it is gone or a zombie: with the pid it
# names one process, so a pid reused after the shim died is never signalled.
shim_start_time() {
  local stat f
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
  stat=${stat##*) }
  read -ra f <<<"$stat"
  [[ ${f[0]} != Z ]] || return 0
  echo "${f[19]}"
}

# The recorded shim pid if that process is still the one we started, else nothing.
shim_pid() {
  local file=$COVE_E2E_STATE/shim.pid pid start
  [[ -f $file ]] || return 0
  read -r pid start <"$file" || return 0
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  [[ -n $start && $(shim_start_time "$pid") == "$start" ]] && echo "$pid"
  return 0
}

# Starts `cove serve` detached (own session: the test runner's `timeout` must not take it down
# before cleanup has killed the sandboxes through it), appends to shim.log, records the pid and
# waits up to 30 s for a new "cove: ready" line on its stderr.
shim_start() {
  local logf=$COVE_E2E_STATE/shim.log before pid deadline
  [[ -z $(shim_pid) ]] || die "a shim from this run is already running (pid $(shim_pid))"
  touch "$logf"
  before=$(grep -c '^cove: ready$' "$logf" || true)
  printf -- '---- cove serve started %s\n' "$(date -u +%FT%TZ)" >>"$logf"
  # Not a process-group leader here, so setsid execs in place and $! is the shim itself.
  setsid "$COVE_BIN" serve --config "$COVE_CONFIG" </dev/null >>"$logf" 2>&1 &
  pid=$!
  disown "$pid" 2>/dev/null || true  # no "Killed" job report when shimctl restarts it
  echo "$pid $(shim_start_time "$pid")" >"$COVE_E2E_STATE/shim.pid"
  deadline=$((SECONDS + 30))
  until (($(grep -c '^cove: ready$' "$logf" || true) > before)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "cove serve exited before it was ready; its log:"
      tail -n 40 "$logf" >&2
      return 1
    fi
    if ((SECONDS >= deadline)); then
      log "cove serve printed no 'cove: ready' within 30 s; its log:"
      tail -n 40 "$logf" >&2
      return 1
    fi
    sleep 0.1
  done
  log "cove serve ready (pid $pid)"
}

# Stops the recorded shim: `signal` (TERM or KILL), then KILL after `grace` seconds; waits until
# it is gone.
shim_stop() {
  local signal=${1:-TERM} grace=${2:-5} pid deadline
  pid=$(shim_pid)
  [[ -n $pid ]] || return 0
  kill "-$signal" "$pid" 2>/dev/null || true
  deadline=$((SECONDS + grace))
  while [[ -n $(shim_pid) ]]; do
    if ((SECONDS >= deadline)); then
      log "cove serve (pid $pid) still running after SIG$signal + ${grace}s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      deadline=$((SECONDS + 5))
      while [[ -n $(shim_pid) ]] && ((SECONDS < deadline)); do sleep 0.1; done
      break
    fi
    sleep 0.1
  done
  rm -f "$COVE_E2E_STATE/shim.pid"
}
