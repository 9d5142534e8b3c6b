#!/usr/bin/env bash
# Build (or reuse) the cached Debian 12 base rootfs used by tests.
#
# Usage: build-base.sh [--print-path]
#   stdout: the rootfs path and nothing else (progress goes to stderr).
#   --print-path: print the path this build would use, without building.
set -euo pipefail

readonly SUITE=bookworm
readonly PACKAGES=(bash coreutils procps python3 python-is-python3 git curl
  ca-certificates iproute2 sudo libnss-myhostname)
readonly CACHE=/var/cache/cove/rootfs

# Keep stdout for the final path only; anything else that prints goes to stderr.
exec 3>&1 1>&2

log() { printf 'build-base: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The Debian mirror comes from the host's apt config; never hard-code a host.
# First URI of a deb822 "Types: deb" stanza whose Suites contain $SUITE.
mirror_from_deb822() {
  local f=/etc/apt/sources.list.d/debian.sources
  [[ -r $f ]] || return 0
  awk -v suite="$SUITE" '
    function flush() {
      gsub(/[ \t]+/, " ", f["types"]); gsub(/[ \t]+/, " ", f["suites"])
      if (!found && (" " f["types"] " ") ~ / deb / &&
          (" " f["suites"] " ") ~ (" " suite " ") &&
          tolower(f["enabled"]) !~ /no/ && split(f["uris"], u, " ") > 0) {
        print u[1]; found = 1
      }
      delete f
    }
    /^#/ { next }
    /^[ \t]*$/ { flush(); next }
    /^[ \t]/ { f[key] = f[key] " " $0; next }   # continuation line
    {
      key = tolower(substr($0, 1, index($0, ":") - 1))
      f[key] = substr($0, index($0, ":") + 1)
    }
    END { flush() }
    ' "$f"
}

# One-line format: "deb [options] URI SUITE components...".
mirror_from_sources_list() {
  local f=/etc/apt/sources.list
  [[ -r $f ]] || return 0
  sed -E 's/\[[^]]*\]//' "$f" |
    awk -v suite="$SUITE" '$1 == "deb" && $3 == suite { print $2; exit }'
}

mirror=$(mirror_from_deb822)
[[ -n $mirror ]] || mirror=$(mirror_from_sources_list)
[[ -n $mirror ]] || die "no '$SUITE' deb source found in the host's apt config"

self=$(realpath "${BASH_SOURCE[0]}")
hash=$({ cat "$self"; printf '%s\n' "${PACKAGES[@]}" "$mirror" "$SUITE"; } |
  sha256sum | cut -c1-16)
dest=$CACHE/base-$hash
marker=.cove-complete

case ${1-} in
  --print-path) echo "$dest" >&3; exit 0 ;;
  '') ;;
  *) die "usage: $0 [--print-path]" ;;
esac

# Fast path: a finished build is reused without taking the lock.
if [[ -e $dest/$marker ]]; then echo "$dest" >&3; exit 0; fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  log "waiting for another build to finish"
  flock 9
fi
# Another run may have finished the build while we waited.
if [[ -e $dest/$marker ]]; then echo "$dest" >&3; exit 0; fi

if ! command -v debootstrap >/dev/null; then
  log "installing debootstrap"
  install_debootstrap() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends debootstrap >&2
  }
  # Only refresh the package lists when the plain install fails.
  install_debootstrap || { apt-get update -q >&2 && install_debootstrap; }
fi

# We hold the lock, so any temp dir left here is from a killed build.
tmp=$CACHE/.tmp-base-$hash
buildlog=$CACHE/.build-$hash.log
rm -rf --one-file-system "$tmp" "$dest"
: >"$buildlog"
on_exit() {
  local rc=$?
  ((rc)) || return 0
  log "build failed (rc=$rc); last lines of $buildlog:"
  tail -n 40 "$buildlog" >&2
  rm -rf --one-file-system "$tmp"
}
trap on_exit EXIT

# All mounts (debootstrap's own proc/sys, and ours for the chroot) live in
# a private mount namespace, so a failure can never leave them on the host.
log "debootstrap $SUITE from $mirror (log: $buildlog)"
unshare --mount --propagation private \
  debootstrap --variant=minbase "$SUITE" "$tmp" "$mirror" >>"$buildlog" 2>&1

log "installing ${PACKAGES[*]}"
# Runs inside the chroot; "$@" is the package list.
chroot_script=$(cat <<'EOF'
apt-get update -q
apt-get install -y -q --no-install-recommends "$@"
apt-get clean
rm -rf /var/lib/apt/lists/*
groupadd -g 1000 user
useradd -m -d /home/user -u 1000 -g 1000 -G sudo -s /bin/bash user
echo 'user ALL=(ALL:ALL) NOPASSWD: ALL' >/etc/sudoers.d/user
chmod 0440 /etc/sudoers.d/user
visudo -cqf /etc/sudoers.d/user
EOF
)
# shellcheck disable=SC2016  # expanded by the inner shell, not here
unshare --mount --propagation private bash -euo pipefail -c '
  t=$1; shift
  mount -t proc proc "$t/proc"
  mount --bind -o ro /sys "$t/sys"
  mount --bind /dev "$t/dev"
  mount --bind /dev/pts "$t/dev/pts"
  # Clean env: the host PATH (pyenv etc.) means nothing inside the rootfs.
  exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C \
    DEBIAN_FRONTEND=noninteractive chroot "$t" /bin/bash -euo pipefail -c "$@"
' mounts "$tmp" "$chroot_script" setup "${PACKAGES[@]}" >>"$buildlog" 2>&1

# minbase ships no /etc/hosts; without it "localhost" would go to DNS.
# (libnss-myhostname above resolves whatever hostname the sandbox has.)
if [[ ! -e $tmp/etc/hosts ]]; then
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
    >"$tmp/etc/hosts"
fi

# Marker last, then an atomic rename: readers never see a partial rootfs.
printf 'suite=%s mirror=%s hash=%s\n' "$SUITE" "$mirror" "$hash" >"$tmp/$marker"
mv -T "$tmp" "$dest"
rm -f "$buildlog"

# Drop older builds, except ones still used as an overlay lower layer.
for old in "$CACHE"/base-*; do
  [[ -d $old && $old != "$dest" ]] || continue
  if grep -qF "$old" /proc/self/mountinfo; then
    log "keeping $old (still mounted)"; continue
  fi
  log "pruning $old"
  rm -rf --one-file-system "$old"
done
rm -f "$CACHE"/.build-*.log

log "done: $(du -sh "$dest" | cut -f1)"
echo "$dest" >&3
