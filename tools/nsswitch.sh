#!/usr/bin/env bash
# Puts `myhostname` into the hosts: line of nsswitch.conf, right after `files`, so every
# `*.localhost` name (api.cove.localhost, 49983-<id>.cove.localhost) resolves to the loopback
# addresses. Debian's libnss-myhostname only edits the file on its first install, so a machine
# that had the package before, or an edited file, can lack it.
#
# Idempotent: a file that already names myhostname is left untouched (no write at all). A change
# keeps a one-time backup (<file>.cove-bak), the file's mode and owner, and is an atomic rename.
#
# Usage: tools/nsswitch.sh          (env COVE_NSSWITCH: another file, for tests; no getent check)
set -euo pipefail

file=${COVE_NSSWITCH:-/etc/nsswitch.conf}

log() { printf 'nsswitch: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The edited text on stdout; exit status 3 when nothing needs to change. Only the first active
# hosts: line counts (as for glibc). myhostname goes right after `files` (an [ACTION] bound to
# files then binds to myhostname, so "files [NOTFOUND=return]" still never reaches DNS for local
# names), else first; a file without a hosts: line gets one.
edit() {
  awk '
    BEGIN { done = 0; changed = 0 }
    !done && /^[ \t]*hosts[ \t]*:/ {
      done = 1
      line = $0
      comment = ""
      if ((c = index(line, "#")) > 0) { comment = substr(line, c); line = substr(line, 1, c - 1) }
      if (line ~ /[ \t:]myhostname([ \t]|\[|$)/) { print; next }
      head = line; sub(/:.*/, ":", head)
      rest = substr(line, length(head) + 1)
      if (match(rest " ", /(^|[ \t])files[ \t[]/)) {
        at = RSTART + RLENGTH - 1  # just after "files"
        rest = substr(rest, 1, at - 1) " myhostname" substr(rest, at)
      } else {
        lead = rest; sub(/[^ \t].*/, "", lead)
        body = substr(rest, length(lead) + 1)
        rest = (lead == "" ? " " : lead) "myhostname" (body == "" ? "" : " " body)
      }
      print head rest comment
      changed = 1
      next
    }
    { print }
    END {
      if (!done) { print "hosts:          files myhostname dns"; changed = 1 }
      exit changed ? 0 : 3
    }
  ' "$1"
}

target=$file
[[ -e $target ]] || die "$file does not exist"
target=$(realpath "$target")  # a symlinked file is edited where it lives

# Read-only until we know a change is needed: plain builds run this as any user.
edited=$(mktemp)
tmp=
trap 'rm -f "$edited" ${tmp:+"$tmp"}' EXIT
rc=0
edit "$target" >"$edited" || rc=$?
((rc == 0 || rc == 3)) || die "cannot read $file"

if ((rc == 0)); then
  ((EUID == 0)) || die "$file lacks myhostname in its hosts: line; run as root to add it"
  backup=$target.cove-bak
  [[ -e $backup ]] || cp -p "$target" "$backup"
  # Same directory, so the rename is atomic.
  tmp=$(mktemp "$target.cove-tmp.XXXXXX")
  cat "$edited" >"$tmp"
  chmod --reference="$target" "$tmp"
  chown --reference="$target" "$tmp"
  mv -f "$tmp" "$target"
  log "added myhostname to the hosts: line of $file (backup: $backup)"
fi

# The real file only: a test file says nothing about this machine's resolver.
if [[ -z ${COVE_NSSWITCH:-} ]]; then
  addrs=$(getent ahosts 49983-abc.cove.localhost | awk '{ print $1 }' | sort -u | tr '\n' ' ')
  [[ $addrs == *127.0.0.1* || $addrs == *::1* ]] ||
    die "49983-abc.cove.localhost does not resolve to the loopback (got: '${addrs% }'); is libnss-myhostname installed?"
fi
