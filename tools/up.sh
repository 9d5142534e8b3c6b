#!/usr/bin/env bash
# `make up`: from a fresh Debian 12 machine to a running shim the official E2B clients can use.
# Installs what is missing (tools/deps.sh, via make), builds, writes the config once, creates a
# development API key once, writes the client environment, starts `cove serve` (it creates the
# local CA), builds the built-in templates (templates/base, templates/code-interpreter-v1: their
# layers are cached by content in /var/cache/cove/layers) and then keeps the shim in the
# foreground. A second run reuses all of it.
#
# Usage: tools/up.sh [--no-serve]    (as root; --no-serve: everything but starting the shim)
# Env:   BUILD            build directory, relative to the repository or absolute (default build)
#        COVE_CONFIG      the config file (default /etc/cove/cove.toml)
#        COVE_STATE_DIR   state_dir written into a new config (default /var/lib/cove); with an
#                         existing config, its state_dir rules (and must match this if set)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-build}
[[ $build == /* ]] || build=$repo/$build
config=${COVE_CONFIG:-/etc/cove/cove.toml}
readonly marker="# Written by tools/up.sh"
serve=1

log() { printf 'up: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case ${1-} in
  --no-serve) serve=0 ;;
  '') ;;
  *) die "usage: tools/up.sh [--no-serve]" ;;
esac
((EUID == 0)) || die "make up must run as root: it installs packages, creates containers, a bridge and iptables rules, and listens on port 443 (try: sudo make up)"

# The quoted strings of a top-level key, one per line (a string, or an array that may span lines);
# status 1 when the key is absent. Enough TOML for the keys read here, which hold plain strings.
toml_strings() {
  awk -v key="$1" '
    function uncomment(s,   i, c, q, out) {
      q = 0; out = ""
      for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "\"") q = !q
        else if (c == "#" && !q) break
        out = out c
      }
      return out
    }
    function strings(s) {
      while (match(s, /"[^"]*"/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) }
    }
    open { s = uncomment($0); strings(s); if (s ~ /\]/) exit; next }  # array continues
    /^[ \t]*\[/ { exit }                                           # tables: past the top level
    {
      s = uncomment($0)
      if (s !~ "^[ \t]*" key "[ \t]*=") next
      found = 1
      sub(/^[^=]*=/, "", s)
      strings(s)
      if (s ~ /^[ \t]*\[/ && s !~ /\][ \t]*$/) open = 1
      else exit
    }
    END { exit found ? 0 : 1 }
  ' "$config"
}

# One config value with the shim's default when the key is absent.
config_string() {
  local v
  if v=$(toml_strings "$1"); then printf '%s' "${v%%$'\n'*}"; else printf '%s' "$2"; fi
}

# Atomic write of stdin to $1 with mode $2 (a temp file in the same directory, then a rename).
write_file() {
  local dest=$1 mode=$2 tmp
  tmp=$(mktemp "$dest.tmp.XXXXXX")
  cat >"$tmp"
  chmod "$mode" "$tmp"
  mv -f "$tmp" "$dest"
}

# 1. Packages, nsswitch, binaries (make's own dependency checks).
make -C "$repo" --no-print-directory BUILD="$build" build
cove=$build/bin/cove
agent=$build/bin/cove-agent
[[ -x $cove && -x $agent ]] || die "the build produced no $cove or $agent"

# 2. The config: written once; afterwards it is the operator's.
if [[ ! -e $config ]]; then
  state=${COVE_STATE_DIR:-/var/lib/cove}
  [[ $state == /* ]] || die "COVE_STATE_DIR must be an absolute path"
  mkdir -p "$(dirname "$config")"
  write_file "$config" 0644 <<EOF
$marker on $(date -u +%F). make up never rewrites this file, except that it keeps
# agent_path at the agent of the checkout it runs from.
# Every key, with its default: host-shim/config/cove.example.toml in the Cove repository.
domain = "cove.localhost"
tls_listen = ["127.0.0.1:443", "[::1]:443"]
# Clients need only the TLS edge; the plain-HTTP listeners (3000/3001) are for tests and debugging.
api_listen = []
sandbox_listen = []
state_dir = "$state"
agent_path = "$agent"
# Built-in templates (make up builds them from templates/ in the repository) share this cache.
layers_dir = "/var/cache/cove/layers"
EOF
  log "wrote $config"
fi
[[ -f $config ]] || die "$config is not a file"

state=$(config_string state_dir /var/lib/cove)
[[ -z ${COVE_STATE_DIR:-} || $COVE_STATE_DIR == "$state" ]] ||
  die "COVE_STATE_DIR differs from state_dir in $config; change one of them"
domain=$(config_string domain cove.localhost)
[[ -n $domain ]] || die "$config sets an empty domain; make up needs one (e.g. cove.localhost)"
tls_cert=$(config_string tls_cert "")

# A config an older make up wrote named a prebuilt base rootfs; `base` is built from its
# definition now, so that line goes (only in a config we wrote) and the layer cache comes in.
old_rootfs=$(config_string base_rootfs "")
if [[ $old_rootfs == /var/cache/cove/rootfs/base-* ]] && head -n 1 "$config" | grep -qF "$marker"; then
  { grep -v '^base_rootfs = ' "$config"
    toml_strings layers_dir >/dev/null || printf '%s\n' 'layers_dir = "/var/cache/cove/layers"'; } |
    write_file "$config" 0644
  log "$config: base is built from templates/base now (base_rootfs removed)"
fi
# Likewise the agent: a config we wrote follows the checkout make up runs from (another clone,
# or a moved one, must not leave it pointing at a binary that is gone or stale).
old_agent=$(config_string agent_path "")
if [[ $old_agent != "$agent" && $old_agent == */bin/cove-agent ]] && head -n 1 "$config" | grep -qF "$marker"; then
  sed "s|^agent_path = \"$old_agent\"\$|agent_path = \"$agent\"|" "$config" | write_file "$config" 0644
  log "agent_path in $config now names this checkout's agent"
fi

# 3. One shim per state directory: `cove serve` holds an flock on <state>/shim.lock.
mkdir -p "$state"
chmod 0700 "$state"  # as `cove serve` leaves it: keys, tokens and the CA key live here
if [[ -e $state/shim.lock ]] && ! flock -n "$state/shim.lock" true; then
  holder=$(lslocks -rn -o PID,PATH 2>/dev/null | awk -v p="$state/shim.lock" '$2 == p { print $1; exit }')
  die "another cove serve already runs with state dir $state${holder:+ (pid $holder)}; stop it first, or use that one"
fi

# 4. Every address the shim will listen on must be free (ss shows wildcards as 0.0.0.0, [::], *).
listens=()
for key in api_listen sandbox_listen tls_listen; do
  if values=$(toml_strings "$key"); then
    [[ -z $values ]] || mapfile -t -O "${#listens[@]}" listens <<<"$values"
  else
    case $key in
      api_listen) listens+=("127.0.0.1:3000" "[::1]:3000") ;;
      sandbox_listen) listens+=("127.0.0.1:3001" "[::1]:3001") ;;
      tls_listen) listens+=("127.0.0.1:443" "[::1]:443") ;;
    esac
  fi
done
taken=$(ss -Hltnp 2>/dev/null || true)
for address in "${listens[@]}"; do
  port=${address##*:}
  host=${address%:*}
  host=${host#\[}
  host=${host%\]}
  [[ $port =~ ^[0-9]+$ ]] || die "$config: listen address '$address' has no port"
  ((port != 0)) || continue
  while read -r _ _ _ local _ users; do
    lport=${local##*:}
    lhost=${local%:*}
    lhost=${lhost#\[}
    lhost=${lhost%\]}
    lhost=${lhost%%%*}  # 127.0.0.53%lo
    [[ $lport == "$port" ]] || continue
    if [[ $lhost == "$host" || $lhost == 0.0.0.0 || $lhost == :: || $lhost == '*' ||
      $host == 0.0.0.0 || $host == :: ]]; then
      who=$(grep -o '"[^"]*",pid=[0-9]*' <<<"$users" | head -n 1 | sed 's/"\([^"]*\)",pid=/\1, pid /')
      die "port $port ($address in $config) is taken by ${who:-another process} on $local; stop it, or change the address in $config"
    fi
  done <<<"$taken"
done

# 5. The development API key: shown once by `cove key create`, so kept in client.env and reused
# while the database still knows it (a new database, or a deleted key, gets a new one).
env_file=$state/client.env
key_known() {
  local key=$1 hash
  [[ $key =~ ^e2b_[0-9a-f]{40}$ && -f $state/cove.db ]] || return 1
  hash=$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)
  [[ $(sqlite3 -readonly -cmd '.timeout 5000' "$state/cove.db" \
    "SELECT count(*) FROM api_keys WHERE hash = '$hash'" 2>/dev/null) == 1 ]]
}
key=
[[ -f $env_file ]] && key=$(sed -n 's/^E2B_API_KEY=//p' "$env_file" | tail -n 1)
if [[ -n $key ]] && key_known "$key"; then
  log "reusing the development API key in $env_file"
else
  errors=$(mktemp)
  key=$("$cove" key create --team dev --config "$config" 2>"$errors") || {
    cat "$errors" >&2
    rm -f "$errors"
    die "cove key create failed"
  }
  rm -f "$errors"
  [[ $key =~ ^e2b_[0-9a-f]{40}$ ]] || die "cove key create printed no key"
  log "created a development API key (team dev)"
fi

# 6. What clients need. With an operator's certificate there is no local CA to trust.
{
  echo "E2B_DOMAIN=$domain"
  echo "E2B_API_KEY=$key"
  [[ -n $tls_cert ]] || echo "NODE_EXTRA_CA_CERTS=$state/ca.pem"
} | (umask 077 && write_file "$env_file" 0600)

if ((!serve)); then
  log "not starting the shim (--no-serve); the built-in templates are built when make up starts it"
  exit 0
fi

# 7. The shim, then the built-in templates through it (cached by content: an unchanged
# definition is a few cache hits). The shim stays in the foreground; Ctrl-C stops it.
"$cove" serve --config "$config" &
shim=$!
trap 'kill -TERM "$shim" 2>/dev/null; wait "$shim"; exit 130' INT TERM
until [[ -S $state/admin.sock ]] && "$cove" sandbox list --config "$config" >/dev/null 2>&1; do
  kill -0 "$shim" 2>/dev/null || { wait "$shim" || true; die "cove serve exited while starting"; }
  sleep 0.2
done
for name in base code-interpreter-v1; do
  log "building the built-in template $name (templates/$name; cached by content)"
  "$cove" template build "$repo/templates/$name" --config "$config" >&2 ||
    { kill -TERM "$shim"; wait "$shim" || true; die "the built-in template $name did not build"; }
done

cat >&2 <<EOF

Cove: clients need only the three variables in $env_file. In another terminal:
  set -a; . $env_file; set +a
  then use the E2B SDK as usual (README.md, "Quick start").
Stop the shim with Ctrl-C (sandboxes keep running); make up again starts it with the same key.

EOF
log "ready"
wait "$shim"
