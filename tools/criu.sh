#!/usr/bin/env bash
# Builds CRIU 4.2.1 from Debian sid's source package into /var/cache/cove/criu/4.2.1/criu.
# Bookworm's criu 3.17 cannot run on this kernel (split vDSO) and 4.1 fails on TCP sockets
# (docs: machine.md §5), so the shim uses its own build. Cached by version: when the binary is
# there and reports 4.2.1 nothing happens (no network); the orig tarball is kept beside it so a
# rebuild needs no download. /etc/apt is never changed (a private apt configuration adds deb-src).
set -euo pipefail

version=4.2.1
debian_version=4.2.1-1
sha256=29ec0ee09e296479fe7048c80980e8ef1d0684d0b0204c2b101dfea19f6725b9
cache=/var/cache/cove/criu
bin=$cache/$version/criu
tarball=$cache/criu_$version.orig.tar.xz

if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "^Version: $version\$"; then
  exit 0
fi

# Build dependencies (only the missing ones), quietly like deps.sh.
build_deps=(build-essential pkgconf libbsd-dev libgnutls28-dev libnet1-dev libnftables-dev libnl-3-dev
            uuid-dev python3-protobuf libaio-dev libcap-dev libprotobuf-dev libprotobuf-c-dev
            protobuf-c-compiler protobuf-compiler)
missing=()
for p in "${build_deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "criu: installing build deps ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/cove-criu-apt.log 2>&1; then
    apt-get update -q >>/tmp/cove-criu-apt.log 2>&1
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/cove-criu-apt.log 2>&1 || {
      tail -n 30 /tmp/cove-criu-apt.log >&2
      exit 1
    }
  fi
fi

work=$(mktemp -d /tmp/cove-criu.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache"

if ! [ -f "$tarball" ] || ! echo "$sha256  $tarball" | sha256sum -c --status; then
  echo "criu: downloading the criu $debian_version source package (Debian sid)" >&2
  mkdir -p "$work/sp" "$work/lists/partial" "$work/dl"
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  [ -n "$mirror" ] || { echo "criu: no Debian mirror in /etc/apt/sources.list.d/debian.sources" >&2; exit 1; }
  printf 'Types: deb-src\nURIs: %s\nSuites: sid\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" >"$work/sp/sid-src.sources"
  opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/sp" -o "Dir::State::Lists=$work/lists")
  apt-get update -q "${opts[@]}" >"$work/apt.log" 2>&1 || { tail -n 20 "$work/apt.log" >&2; exit 1; }
  # The Debian tarball may 404 (it does not matter: the orig tarball is all we build from).
  (cd "$work/dl" && apt-get source --download-only -q "${opts[@]}" "criu=$debian_version" >>"$work/apt.log" 2>&1) || true
  [ -f "$work/dl/criu_$version.orig.tar.xz" ] || {
    tail -n 20 "$work/apt.log" >&2
    echo "criu: could not download criu_$version.orig.tar.xz" >&2
    exit 1
  }
  echo "$sha256  $work/dl/criu_$version.orig.tar.xz" | sha256sum -c --status || {
    echo "criu: checksum mismatch for criu_$version.orig.tar.xz (expected $sha256)" >&2
    exit 1
  }
  cp "$work/dl/criu_$version.orig.tar.xz" "$tarball.tmp"
  mv "$tarball.tmp" "$tarball"
fi

echo "criu: building criu $version" >&2
tar -C "$work" -xf "$tarball"
src=$(find "$work" -maxdepth 1 -type d -name "criu-$version*" | head -n 1)
[ -n "$src" ] || { echo "criu: unexpected tarball layout" >&2; exit 1; }
if ! make -C "$src" -j2 criu >"$work/build.log" 2>&1; then
  tail -n 30 "$work/build.log" >&2
  echo "criu: build failed" >&2
  exit 1
fi
"$src/criu/criu" --version | grep -q "^Version: $version\$" || { echo "criu: built binary is not $version" >&2; exit 1; }
mkdir -p "$cache/$version"
install -m 0755 "$src/criu/criu" "$bin.tmp"
mv "$bin.tmp" "$bin"
