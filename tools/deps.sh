#!/usr/bin/env bash
# Installs what Cove needs from Debian's repositories, only what is missing, quietly, and makes
# `*.localhost` names resolve (tools/nsswitch.sh).
# Idempotent: a machine that has everything makes no apt call and no write at all.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libboost-dev libprotobuf-dev protobuf-compiler libprotoc-dev
  liburing-dev libseccomp-dev libcap-dev libssl-dev libsqlite3-dev
  nlohmann-json3-dev libgtest-dev zlib1g-dev libnghttp2-dev
  debootstrap util-linux curl ca-certificates iproute2 iptables e2fsprogs runc
  clang-14 libclang-rt-14-dev
  nodejs npm
  libnss-myhostname sqlite3 libcpp-httplib-dev
  docker-registry skopeo umoci apache2-utils
  python3-ipykernel python3-matplotlib python3-pandas python3-pil
  node-typescript
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node may come from elsewhere (e.g. NodeSource) and satisfy us without Debian's package.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]}")
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$here/criu.sh"  # CRIU for cold pause, snapshots and fork (its own build deps, cached by version)
if [ ${#missing[@]} -eq 0 ]; then
  exec "$here/nsswitch.sh"
fi

echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/cove-apt.log 2>&1; then
  apt-get update -q >>/tmp/cove-apt.log 2>&1
  apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/cove-apt.log 2>&1 || {
    tail -n 30 /tmp/cove-apt.log >&2
    exit 1
  }
fi
# The tests start docker-registry themselves, on loopback with TLS; the package's own service
# (plain HTTP on :5000 for every interface) is not wanted.
if [[ " ${missing[*]} " == *" docker-registry "* ]] && [[ -d /run/systemd/system ]]; then
  systemctl disable --now docker-registry >/dev/null 2>&1 || true
fi
"$here/nsswitch.sh"
