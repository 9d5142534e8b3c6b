#!/usr/bin/env bash
# Controls the shim of a running tests/e2e/shim/run.sh (the tests call it as $COVE_SHIMCTL).
#
#   shimctl.sh restart   SIGKILL the shim (no clean shutdown: a crash), start it again with the
#                        same config, wait for "cove: ready" (≤ 30 s)
#   shimctl.sh status    print the shim's pid, exit 1 if it is not running
#
# Env (exported by run.sh): COVE_BIN, COVE_CONFIG, COVE_E2E_STATE.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

for v in COVE_BIN COVE_CONFIG COVE_E2E_STATE; do
  [[ -n ${!v:-} ]] || die "$v is not set (run through tests/e2e/shim/run.sh)"
done
[[ -f $COVE_E2E_STATE/shim.pid ]] || die "no shim.pid in $COVE_E2E_STATE: run.sh did not start a shim"

case ${1:-} in
  restart)
    pid=$(shim_pid)
    [[ -n $pid ]] || die "the shim is not running (see $COVE_E2E_STATE/shim.log)"
    shim_stop KILL 5
    log "killed cove serve (pid $pid) with SIGKILL"
    shim_start
    ;;
  status)
    pid=$(shim_pid)
    [[ -n $pid ]] || { echo "not running"; exit 1; }
    echo "$pid"
    ;;
  *)
    die "usage: $0 restart | status"
    ;;
esac
