#!/usr/bin/env bash
# shellcheck disable=SC2317  # the cleanup functions run from the EXIT trap
# End-to-end tests of the host shim: the unchanged npm `e2b` SDK (no debug mode) against
# `cove serve`, creating real container sandboxes from the Debian base rootfs. Builds nothing.
# Three phases, one shim (restarted with another config between them; sandboxes are killed first):
#   plain    *.test.mjs except tls*: plain HTTP on 127.0.0.1:3000 (control plane) and
#            127.0.0.1:3001 (data plane, routed by the E2b-Sandbox-Id / E2b-Sandbox-Port headers);
#            the tests get E2B_API_URL and E2B_SANDBOX_URL; no TLS listener.
#   tls-h2   tls*.test.mjs: only the TLS edge, on 127.0.0.1:8443 and [::1]:8443, domain
#            cove.localhost:8443, certificates from the shim's local CA (<state>/ca.pem), h2 offered;
#            of the E2B_* variables the tests get only E2B_DOMAIN and E2B_API_KEY, plus
#            NODE_EXTRA_CA_CERTS.
#   tls-h1   the same files again with `http2 = false` (ALPN offers http/1.1 only).
# Every selected phase runs; any failing phase fails the run.
#
# Usage: tests/e2e/shim/run.sh [NAME...]   (as root; NAME: run only <NAME>.test.mjs)
# Env:   COVE_BUILD_DIR   where bin/cove, bin/cove-agent, bin/cove-sandbox-init are (default <repo>/build)
#        COVE_E2E_SHIM_TIMEOUT  seconds for each phase's node run (default 1500)
#        COVE_E2E_API_PORT, COVE_E2E_SANDBOX_PORT  the shim's ports on 127.0.0.1 (default 3000, 3001)
#        COVE_E2E_TLS_PORT  the TLS edge's port on 127.0.0.1 and ::1 (default 8443)
# Needs: *.cove.localhost resolving to loopback (`myhostname` on the hosts: line of
#        /etc/nsswitch.conf, with libnss-myhostname installed; tools/deps.sh sets that up).
#
# Host resources it makes (and always removes again):
#   /var/tmp/cove-e2e-shim.XXXXXX   state dir: cove.toml, cove.db, shim.log, sandboxes
#   bridge cove-e2e, subnet 10.89.0.0/16 (made by the shim; iptables rules in its COVE-* chains)
#   netns cove-e2e-out + veth cove-e2e-oh (host, 10.99.0.1/30) / cove-e2e-on (ns, 10.99.0.2/30),
#     with an HTTP server on 10.99.0.2:8080: an "outside" host sandboxes reach through the NAT
#   an HTTP "canary" on 0.0.0.0:<ephemeral> of the host: something sandboxes must NOT reach
#
# The tests get E2B_API_KEY (team e2e), COVE_OTHER_TEAM_KEY (team other), COVE_ACCESS_TOKEN (an
# access token of team e2e, for the CLI's E2B_ACCESS_TOKEN), COVE_CONFIG, COVE_BIN,
# COVE_SHIMCTL, COVE_E2E_STATE, COVE_OUTSIDE_URL, COVE_OUTSIDE_NETNS, COVE_HOST_CANARY_PORT,
# COVE_BRIDGE_ADDR, COVE_OUTSIDE_HOST_ADDR, COVE_API_PORT, COVE_SANDBOX_PORT; the plain phase
# E2B_API_URL and E2B_SANDBOX_URL; the TLS phases E2B_DOMAIN, NODE_EXTRA_CA_CERTS and
# COVE_E2E_HTTP2 (1 or 0), and never E2B_API_URL, E2B_SANDBOX_URL or E2B_DEBUG.
# When TLS tests run, a test OCI registry runs too (registry.sh: docker-registry on
# 127.0.0.1:${COVE_E2E_REGISTRY_PORT:-5443}, HTTPS with its own CA, which the shim trusts through
# `registry_ca`); the TLS phases get COVE_REGISTRY, COVE_REGISTRY_USER, COVE_REGISTRY_PASSWORD,
# COVE_REGISTRY_IMAGE, COVE_REGISTRY_IMAGE_DOCKER and COVE_REGISTRY_IMAGE_LIST.
# Exit status: non-zero if anything fails; each phase's TAP summary ("# pass N" / "# fail N")
# ends its output.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
# shellcheck source=registry.sh
source "$here/registry.sh"

build=${COVE_BUILD_DIR:-$repo/build}
cove=$build/bin/cove
agent=$build/bin/cove-agent
api_port=${COVE_E2E_API_PORT:-3000}
sandbox_port=${COVE_E2E_SANDBOX_PORT:-3001}
tls_port=${COVE_E2E_TLS_PORT:-8443}
tls_name=cove.localhost
tls_domain=$tls_name:$tls_port
bridge="cove-e2e"
subnet=10.89.0.0/16
bridge_addr=10.89.0.1
out_ns="cove-e2e-out"
out_host_if="cove-e2e-oh"
out_ns_if="cove-e2e-on"
out_host_addr=10.99.0.1
out_ns_addr=10.99.0.2
out_port=8080
run_timeout=${COVE_E2E_SHIM_TIMEOUT:-1500}

((EUID == 0)) || die "must run as root (it starts the shim, which makes containers, a bridge and iptables rules)"
[[ -x $cove ]] || die "cove binary not found or not executable: $cove (build first, or set COVE_BUILD_DIR)"
[[ -x $agent ]] || die "agent binary not found or not executable: $agent"
[[ -x $build/bin/cove-sandbox-init ]] || die "cove-sandbox-init not found beside cove in $build/bin"
for tool in node curl ip iptables setsid findmnt losetup /usr/bin/python3; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
[[ $run_timeout =~ ^[0-9]+$ ]] || die "COVE_E2E_SHIM_TIMEOUT must be a number of seconds"
[[ $api_port =~ ^[0-9]+$ && $sandbox_port =~ ^[0-9]+$ && $tls_port =~ ^[0-9]+$ ]] ||
  die "COVE_E2E_API_PORT/COVE_E2E_SANDBOX_PORT/COVE_E2E_TLS_PORT must be port numbers"

# 1. The SDK lives in the parent suite's node_modules (Node resolves `e2b` upwards from here).
e2e=$(cd "$here/.." && pwd)
# shellcheck source=../lib.sh
. "$e2e/lib.sh"
e2e_npm_ci_if_stale "$e2e"

# 2. The test files, checked before anything is set up.
tests=()
e2e_test_files "$here" "$@"
plain_tests=()
tls_tests=()
for t in "${tests[@]}"; do
  if [[ $(basename "$t") == tls* ]]; then tls_tests+=("$t"); else plain_tests+=("$t"); fi
done

# The TLS clients find api.<domain> and <port>-<id>.<domain> through the system resolver.
if ((${#tls_tests[@]})); then
  for name in "api.$tls_name" "49983-e2echeck.$tls_name"; do
    addr=$(getent hosts "$name" | awk '{ print $1; exit }') || true
    [[ $addr == ::1 || $addr == 127.* ]] ||
      die "$name does not resolve to loopback (got '$addr'): install libnss-myhostname and put myhostname on the hosts: line of /etc/nsswitch.conf (tools/deps.sh does)"
  done
fi

# 3. Rootfs (cached; progress goes to stderr, the path is the only stdout).
rootfs=$("$repo/rootfs-builder/build-base.sh")
[[ -d $rootfs ]] || die "build-base.sh printed no rootfs directory: '$rootfs'"

# Something already on the fixed ports would receive every test request.
for port in "$api_port" "$sandbox_port" "$tls_port"; do
  if [[ -n $(ss -Hltn "sport = :$port") ]]; then
    die "something already listens on port $port; stop it first"
  fi
done
if ip link show "$bridge" >/dev/null 2>&1; then
  die "interface $bridge exists: another shim e2e run is active, or one left it (ip link del $bridge)"
fi
# Each shim has its own iptables chains (COVE-IN/FWD/NAT-<bridge>), so other shims are no
# concern; only a shim built before that shares the fixed-name chains this run would rewrite.
other_rules=$( { iptables -w -S; iptables -w -t nat -S; } 2>/dev/null | grep -E '^-A COVE-(INPUT|FORWARD|POSTROUTING) ' | grep -vE "\b$bridge\b|\b10\.89\." || true)
if [[ -n $other_rules ]]; then
  log "another shim's rules are in the shared COVE-* iptables chains:"
  # shellcheck disable=SC2001  # indent every line
  sed 's/^/  /' <<<"$other_rules" >&2
  [[ ${COVE_E2E_SHARED_CHAINS_OK:-} == 1 ]] ||
    die "starting a second shim would replace them; stop the other shim (or set COVE_E2E_SHARED_CHAINS_OK=1)"
fi
# A previous run that was killed before its cleanup can leave the outside host behind; it has our
# names, so it is ours to remove.
if ip netns list | grep -q "^$out_ns\b"; then
  log "removing a stale netns $out_ns from an earlier run"
  for p in $(ip netns pids "$out_ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  ip netns del "$out_ns" || die "cannot remove stale netns $out_ns"
fi
if ip link show "$out_host_if" >/dev/null 2>&1; then
  ip link del "$out_host_if" || die "cannot remove stale interface $out_host_if"
fi

# 4. State, and its cleanup (always).
state=$(mktemp -d /var/tmp/cove-e2e-shim.XXXXXX)
export COVE_E2E_STATE=$state COVE_BIN=$cove COVE_CONFIG=$state/cove.toml
outside_pid=
canary_pid=

# Every live sandbox, through the running shim's admin socket.
kill_sandboxes() {
  local ids id
  ids=$("$cove" sandbox list --config "$COVE_CONFIG" 2>>"$state/cli.log" | awk 'NR > 1 { print $1 }') || return 1
  for id in $ids; do
    "$cove" sandbox kill "$id" --config "$COVE_CONFIG" >/dev/null 2>>"$state/cli.log" ||
      log "cove sandbox kill $id failed"
  done
  # The list must be empty now.
  ids=$("$cove" sandbox list --config "$COVE_CONFIG" 2>>"$state/cli.log" | awk 'NR > 1 { print $1 }') || return 1
  [[ -z $ids ]] || { log "sandboxes still listed after kill: $ids"; return 1; }
}

# Last resort when the shim cannot do it: kill the processes of this run's sandboxes by cgroup.
kill_sandbox_cgroups() {
  local dir id cg
  for dir in "$state"/sandboxes/*/; do
    id=$(basename "$dir")
    for cg in /sys/fs/cgroup/*/cove/"$id" /sys/fs/cgroup/cove/"$id"; do
      [[ -d $cg ]] || continue
      if [[ -f $cg/cgroup.kill ]]; then
        echo 1 >"$cg/cgroup.kill" 2>/dev/null || true
      elif [[ -f $cg/cgroup.procs ]]; then
        xargs -r kill -KILL <"$cg/cgroup.procs" 2>/dev/null || true
      fi
    done
  done
  sleep 1
  for dir in "$state"/sandboxes/*/; do
    id=$(basename "$dir")
    for cg in /sys/fs/cgroup/*/cove/"$id" /sys/fs/cgroup/cove/"$id"; do
      [[ -d $cg ]] && rmdir "$cg" 2>/dev/null
    done
  done
  return 0
}

# Removes our rules from the shim's COVE-* chains (they are shared by name with any other shim
# on this host, so only rules naming our bridge or subnet go), then chains left empty.
iptables_cleanup() {
  local table chain line hook words
  for table in filter nat; do
    for chain in $(iptables -w -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^COVE-/ { print $2 }'); do
      while read -r line; do
        [[ -n $line ]] || continue
        read -ra words <<<"${line/#-A /-D }"
        iptables -w -t "$table" "${words[@]}" || log "could not delete iptables rule: $line"
      done < <(iptables -w -t "$table" -S "$chain" | grep -E -- "^-A .*(\b$bridge\b|\b10\.89\.)" || true)
      if ! iptables -w -t "$table" -S "$chain" | grep -q '^-A'; then
        while read -r hook; do
          [[ -n $hook ]] || continue
          read -ra words <<<"${hook/#-A /-D }"
          iptables -w -t "$table" "${words[@]}" || log "could not unhook: $hook"
        done < <(iptables -w -t "$table" -S | grep -E -- "^-A [A-Z]+ .*-j $chain\$" || true)
        iptables -w -t "$table" -X "$chain" || log "could not delete chain $chain"
      fi
    done
  done
}

cleanup() {
  local rc=$? pid m dev back id
  trap - EXIT INT TERM
  set +e
  # Sandboxes first: the shim leaves them running when it stops.
  if [[ -f $COVE_CONFIG ]]; then
    if [[ -z $(shim_pid) ]] && compgen -G "$state/sandboxes/*" >/dev/null; then
      log "shim not running but sandboxes remain: starting it once to kill them"
      shim_start || true
    fi
    if [[ -n $(shim_pid) ]]; then
      kill_sandboxes || { log "killing sandboxes through the shim failed"; ((rc)) || rc=1; }
    fi
  fi
  if ((rc != 0)) && [[ -f $state/shim.log ]]; then
    log "---- last 100 lines of the shim log ($state/shim.log)"
    tail -n 100 "$state/shim.log" >&2
  fi
  shim_stop TERM 5
  registry_stop
  if compgen -G "$state/sandboxes/*" >/dev/null; then
    # The shim removes a sandbox's directory when it is destroyed; what is left was not.
    log "sandbox directories left after the shim stopped: $(cd "$state/sandboxes" && echo *)"
    kill_sandbox_cgroups
  fi

  # The outside host and the canary.
  for pid in "$outside_pid" "$canary_pid"; do
    [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null
  done
  if ip netns list | grep -q "^$out_ns\b"; then
    for pid in $(ip netns pids "$out_ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$out_ns" || log "could not delete netns $out_ns"
  fi
  ip link show "$out_host_if" >/dev/null 2>&1 && ip link del "$out_host_if"

  # The shim's host network for our bridge: leftover veths, the bridge, our iptables rules.
  if ip link show "$bridge" >/dev/null 2>&1; then
    for dev in $(ip -o link show master "$bridge" | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
      ip link del "$dev" 2>/dev/null
    done
    ip link del "$bridge" || log "could not delete bridge $bridge"
  fi
  # `cove network down` removes the COVE-* chains whole, so only when no other shim has rules in
  # them; otherwise (and for anything it left) only our own rules go.
  if "$cove" 2>&1 | grep -q 'network down' &&
    ! { iptables -w -S; iptables -w -t nat -S; } 2>/dev/null | grep -E '^-A COVE-' | grep -qvE "\b$bridge\b|\b10\.89\."; then
    "$cove" network down --config "$COVE_CONFIG" 2>>"$state/cli.log" || log "cove network down failed"
  fi
  iptables_cleanup

  # Mounts, loop devices and then the state dir itself.
  if [[ $state == /var/tmp/cove-e2e-shim.* && $state != *..* && -d $state ]]; then
    while read -r m; do
      umount -l "$m" 2>/dev/null || log "could not unmount $m"
    done < <(findmnt -rn -o TARGET | awk -v p="$state/" 'index($0, p) == 1' | sort -r)
    while read -r dev back; do
      [[ $back == "$state"/* ]] && { losetup -d "$dev" 2>/dev/null || log "could not detach $dev ($back)"; }
    done < <(losetup -nO NAME,BACK-FILE 2>/dev/null)
    if findmnt -rn -o TARGET | grep -q "^$state/"; then
      log "mounts remain under $state; leaving it in place"
      ((rc)) || rc=1
    else
      rm -rf --one-file-system "$state" || { log "could not remove $state"; ((rc)) || rc=1; }
    fi
  else
    log "refusing to remove unexpected state path '$state'"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 5. Config and API keys. One config per phase (see the header), same state.
toml_list() {
  local out="" a
  for a in "$@"; do out+="${out:+, }\"$a\""; done
  printf '[%s]' "$out"
}
write_config() {
  local api=() sbx=() tls=() domain="" http2=true ca_line=""
  # The test registry's CA, once it runs (registry.sh).
  [[ -z $registry_ca ]] || ca_line="registry_ca = \"$registry_ca\""
  case $1 in
    plain) api=("127.0.0.1:$api_port") sbx=("127.0.0.1:$sandbox_port") ;;
    tls-h2) tls=("127.0.0.1:$tls_port" "[::1]:$tls_port") domain=$tls_domain ;;
    tls-h1) tls=("127.0.0.1:$tls_port" "[::1]:$tls_port") domain=$tls_domain http2=false ;;
    *) die "write_config: unknown phase $1" ;;
  esac
  cat >"$COVE_CONFIG" <<EOF
# Written by tests/e2e/shim/run.sh (phase $1).
api_listen = $(toml_list "${api[@]}")
sandbox_listen = $(toml_list "${sbx[@]}")
tls_listen = $(toml_list "${tls[@]}")
http2 = $http2
domain = "$domain"
$ca_line
state_dir = "$state"
agent_path = "$agent"
default_timeout_s = 300
max_timeout_s = 3600
pids_max = 512
bridge = "$bridge"
subnet = "$subnet"

[templates.base]
rootfs = "$rootfs"
aliases = ["e2e-alias"]
cpu_count = 1
memory_mb = 256
disk_size_mb = 512
EOF
}
if ((${#plain_tests[@]})); then write_config plain; else write_config tls-h2; fi

new_key() {
  local key
  key=$("$cove" key create --team "$1" --config "$COVE_CONFIG" 2>>"$state/cli.log") ||
    die "cove key create --team $1 failed: $(tail -n 5 "$state/cli.log")"
  [[ $key =~ ^[[:graph:]]+$ ]] || die "cove key create --team $1 printed no single-line key"
  printf '%s' "$key"
}
E2B_API_KEY=$(new_key e2e)
COVE_OTHER_TEAM_KEY=$(new_key other)
[[ $E2B_API_KEY != "$COVE_OTHER_TEAM_KEY" ]] || die "cove key create printed the same key twice"
COVE_ACCESS_TOKEN=$("$cove" token create --team e2e --config "$COVE_CONFIG" 2>>"$state/cli.log") ||
  die "cove token create --team e2e failed: $(tail -n 5 "$state/cli.log")"
[[ $COVE_ACCESS_TOKEN =~ ^sk_e2b_[0-9a-f]{40}$ ]] || die "cove token create printed no sk_e2b_ token"

# 6. The outside host: its own netns, a /30 to the host, an HTTP server with a marker page.
www=$state/outside-www
mkdir -p "$www"
echo "cove-e2e-outside" >"$www/index.html"
ip netns add "$out_ns"
ip link add "$out_host_if" type veth peer name "$out_ns_if"
ip link set "$out_ns_if" netns "$out_ns"
ip addr add "$out_host_addr/30" dev "$out_host_if"
ip link set "$out_host_if" up
ip -n "$out_ns" addr add "$out_ns_addr/30" dev "$out_ns_if"
ip -n "$out_ns" link set "$out_ns_if" up
ip -n "$out_ns" link set lo up
# Replies to the NATed sandboxes go back to the host end.
ip -n "$out_ns" route add default via "$out_host_addr"
ip netns exec "$out_ns" /usr/bin/python3 "$here/httpd.py" "$www" "$out_ns_addr" "$out_port" "$state/outside.port" \
  </dev/null >>"$state/outside.log" 2>&1 &
outside_pid=$!

# The canary: a host listener on every address, on a free port. Sandboxes must not reach it.
canary_www=$state/canary-www
mkdir -p "$canary_www"
echo "cove-e2e-canary" >"$canary_www/index.html"
/usr/bin/python3 "$here/httpd.py" "$canary_www" 0.0.0.0 0 "$state/canary.port" </dev/null >>"$state/canary.log" 2>&1 &
canary_pid=$!

deadline=$((SECONDS + 30))
until [[ $(curl -s --max-time 1 "http://$out_ns_addr:$out_port/" || true) == cove-e2e-outside ]]; do
  if ((SECONDS >= deadline)); then
    cat "$state/outside.log" >&2 2>/dev/null
    die "the outside HTTP server on $out_ns_addr:$out_port did not answer"
  fi
  sleep 0.1
done
until [[ -f $state/canary.port ]]; do
  if ((SECONDS >= deadline)); then
    cat "$state/canary.log" >&2 2>/dev/null
    die "the canary HTTP server did not start"
  fi
  sleep 0.1
done
canary_port=$(<"$state/canary.port")

# The test registry for fromImage (TLS phases only); every phase's config names its CA.
if ((${#tls_tests[@]})); then
  registry_start "$state/registry" "$rootfs"
fi

# 7. What every phase's tests get.
export E2B_API_KEY COVE_OTHER_TEAM_KEY COVE_ACCESS_TOKEN
export COVE_SHIMCTL=$here/shimctl.sh
export COVE_OUTSIDE_URL=http://$out_ns_addr:$out_port/
export COVE_OUTSIDE_NETNS=$out_ns
export COVE_OUTSIDE_HOST_ADDR=$out_host_addr
export COVE_BRIDGE_ADDR=$bridge_addr
export COVE_HOST_CANARY_PORT=$canary_port
export COVE_API_PORT=$api_port COVE_SANDBOX_PORT=$sandbox_port

# 8. The phases. Each starts the shim with its config (after killing what the phase before left)
# and runs its test files one at a time, in an environment with only its own E2B_* variables.
start_phase() {
  local phase=$1
  if [[ -n $(shim_pid) ]]; then
    kill_sandboxes || log "killing the sandboxes left before phase $phase failed"
    shim_stop TERM 10
  fi
  write_config "$phase"
  shim_start || die "cove serve did not start for phase $phase"
}

# run_phase NAME [VAR=VALUE...] -- FILE...
run_phase() {
  local name=$1 envs=() rc start
  shift
  while [[ $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  log "phase $name: running $# test files (state $state)"
  start=$SECONDS
  set +e
  timeout --kill-after=10 "$run_timeout" \
    env -u E2B_DEBUG -u E2B_DOMAIN -u E2B_ACCESS_TOKEN -u E2B_API_URL -u E2B_SANDBOX_URL \
    -u NODE_EXTRA_CA_CERTS -u COVE_E2E_HTTP2 "${envs[@]}" \
    node --test --test-reporter=tap --test-concurrency=1 --test-force-exit "$@"
  rc=$?
  set -e
  log "phase $name: finished in $((SECONDS - start)) s with status $rc"
  return "$rc"
}

status=0
failed=()
note_failure() {
  ((status)) || status=$2
  failed+=("$1")
}
if ((${#plain_tests[@]})); then
  start_phase plain
  rc=0
  run_phase plain "E2B_API_URL=http://127.0.0.1:$api_port" "E2B_SANDBOX_URL=http://127.0.0.1:$sandbox_port" \
    -- "${plain_tests[@]}" || rc=$?
  ((rc == 0)) || note_failure plain "$rc"
fi
if ((${#tls_tests[@]})); then
  for phase in tls-h2 tls-h1; do
    start_phase "$phase"
    # The shim makes its CA on the first TLS start; clients trust it through NODE_EXTRA_CA_CERTS.
    grep -q 'BEGIN CERTIFICATE' "$state/ca.pem" 2>/dev/null || die "phase $phase: no CA certificate at $state/ca.pem"
    http2=1
    [[ $phase == tls-h1 ]] && http2=0
    rc=0
    run_phase "$phase" "E2B_DOMAIN=$tls_domain" "NODE_EXTRA_CA_CERTS=$state/ca.pem" "COVE_E2E_HTTP2=$http2" \
      "${registry_env[@]}" \
      -- "${tls_tests[@]}" || rc=$?
    ((rc == 0)) || note_failure "$phase" "$rc"
  done
fi
if ((${#failed[@]})); then
  log "FAILED phases: ${failed[*]}"
else
  log "all phases passed"
fi
exit "$status"
