# shellcheck shell=bash
# A throwaway OCI registry on loopback for the `fromImage` e2e tests (sourced by run.sh; needs
# lib.sh's log/die and shim_start_time). Debian's `docker-registry` (distribution 2.8) serves
# HTTPS on 127.0.0.1:$COVE_E2E_REGISTRY_PORT (default 5443) with a throwaway CA and htpasswd
# (bcrypt) Basic auth for a random user; its storage is per run, under the e2e state dir.
#
# The image it holds is made from the cached base rootfs with umoci, four layers:
#   1  the rootfs, Docker-style names ("etc/passwd", no "./" or "/"), /dev empty
#   2  /opt/cove-image/{kept,gone,replaced/old}
#   3  whiteouts: etc/.wh.motd, opt/cove-image/.wh.gone
#   4  /opt/cove-image/replaced made opaque (.wh..wh..opq), holding only "new"
# config: Env PATH + IMAGE_MARKER=from-registry, WorkingDir /srv, User root, Cmd bash.
# Pushed as three tags of cove/test:
#   1         OCI manifest (what skopeo keeps from an oci: layout)
#   1-docker  the same image as a Docker schema 2 manifest (skopeo --format v2s2)
#   list      an OCI image index: a linux/arm64 entry first (same layers, IMAGE_MARKER=wrong-platform),
#             then linux/amd64 (the image of tag 1); a puller must pick amd64
# The OCI layout is cached under /var/cache/cove/oci/, keyed by the rootfs path (which carries
# the rootfs content hash) and this file's hash; CI reruns only push.
#
# Direct use (a check by hand, as root):  tests/e2e/shim/registry.sh check
#   starts the registry in a temp dir, pushes, `skopeo inspect`s every tag, stops, cleans up.

registry_port=${COVE_E2E_REGISTRY_PORT:-5443}
registry_repo=cove/test
registry_cache=/var/cache/cove/oci
registry_pid=
registry_pid_start=
registry_dir=
registry_ca=
registry_env=()

# registry_layout ROOTFS: prints the cached OCI layout for ROOTFS (building it first if needed).
registry_layout() {
  local rootfs=${1%/} key out tmp start
  key=$(basename "$rootfs")-$(sha256sum <"${BASH_SOURCE[0]}" | cut -c1-12)
  out=$registry_cache/e2e-image-$key
  if [[ -f $out/index.json && -f $out/.cove-complete ]]; then
    echo "$out"
    return 0
  fi
  mkdir -p "$registry_cache"
  # Layouts of other rootfs builds or of an older recipe; only ours live here.
  find "$registry_cache" -mindepth 1 -maxdepth 1 \( -name 'e2e-image-*' -o -name '.build.*' \) \
    ! -name "e2e-image-$key" -exec rm -rf {} + 2>/dev/null || true
  tmp=$(mktemp -d "$registry_cache/.build.XXXXXX")
  start=$SECONDS
  log "building the registry test image from $rootfs (cached afterwards in $out)"
  # Its own bash: `set -e` holds there, which it would not inside this `if`.
  if ! bash "${BASH_SOURCE[0]}" build-layout "$rootfs" "$tmp/oci" "$tmp/work" >"$tmp/build.log" 2>&1; then
    tail -n 20 "$tmp/build.log" >&2
    rm -rf "$tmp"
    die "could not build the registry test image"
  fi
  touch "$tmp/oci/.cove-complete"
  rm -rf "$out"
  mv "$tmp/oci" "$out"
  rm -rf "$tmp"
  log "registry test image built in $((SECONDS - start)) s"
  echo "$out"
}

# registry_build_layout ROOTFS OUT WORK: the image described at the top, as tags 1 and list of
# the OCI layout OUT. WORK is scratch space. Runs under `set -euo pipefail` (registry.sh build-layout).
registry_build_layout() {
  local rootfs=$1 out=$2 work=$3 top=() entry
  mkdir -p "$work"
  umoci init --layout "$out"
  umoci new --image "$out:1"

  # 1: the rootfs. Named the way `docker save` names entries, without the build marker and
  # without device nodes (an image has an empty /dev; the runtime provides one).
  for entry in "$rootfs"/* "$rootfs"/.[!.]*; do
    entry=${entry##*/}
    [[ -e $rootfs/$entry || -L $rootfs/$entry ]] && [[ $entry != dev && $entry != .cove-complete ]] && top+=("$entry")
  done
  tar -C "$rootfs" --numeric-owner -cf "$work/rootfs.tar" "${top[@]}"
  tar -C "$rootfs" --numeric-owner --no-recursion -rf "$work/rootfs.tar" dev
  umoci raw add-layer --image "$out:1" --history.created_by "debootstrap tree (rootfs-builder/build-base.sh)" \
    "$work/rootfs.tar"
  rm -f "$work/rootfs.tar"

  # 2-4 are tars made here and added verbatim: `umoci insert` (0.4.7) writes tars without the
  # final padding and end-of-archive blocks, which strict readers rightly refuse. Docker-style
  # diffs: parent directories included, owner root, names sorted.
  # 2: files for the whiteout and opaque layers to act on.
  mkdir -p "$work/l2/opt/cove-image/replaced"
  echo kept >"$work/l2/opt/cove-image/kept"
  echo gone >"$work/l2/opt/cove-image/gone"
  echo old >"$work/l2/opt/cove-image/replaced/old"
  # 3: one layer, two whiteouts: a file of layer 1 and a file of layer 2.
  mkdir -p "$work/l3/etc" "$work/l3/opt/cove-image"
  : >"$work/l3/etc/.wh.motd"
  : >"$work/l3/opt/cove-image/.wh.gone"
  # 4: an opaque directory: what layer 2 put in replaced/ disappears.
  mkdir -p "$work/l4/opt/cove-image/replaced"
  : >"$work/l4/opt/cove-image/replaced/.wh..wh..opq"
  echo new >"$work/l4/opt/cove-image/replaced/new"
  chmod -R u=rwX,go=rX "$work/l2" "$work/l3" "$work/l4"
  local n comment roots=()
  for n in 2 3 4; do
    case $n in
      2) comment="add /opt/cove-image" roots=(opt) ;;
      3) comment="rm /etc/motd /opt/cove-image/gone" roots=(etc opt) ;;
      4) comment="replace /opt/cove-image/replaced" roots=(opt) ;;
    esac
    tar -C "$work/l$n" --sort=name --numeric-owner --owner=0 --group=0 -cf "$work/l$n.tar" "${roots[@]}"
    umoci raw add-layer --image "$out:1" --history.created_by "$comment" "$work/l$n.tar"
  done

  umoci config --image "$out:1" --history.created_by "config" \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env IMAGE_MARKER=from-registry \
    --config.workingdir /srv --config.user root --config.cmd bash \
    --os linux --architecture amd64
  umoci gc --layout "$out"

  # "list": an image index whose first entry is another platform (same layers, other marker).
  /usr/bin/python3 - "$out" <<'EOF'
import hashlib, json, os, sys
out = sys.argv[1]
def blob(digest): return open(os.path.join(out, 'blobs', 'sha256', digest.split(':', 1)[1]), 'rb').read()
def put(data):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(out, 'blobs', 'sha256', d), 'wb') as f: f.write(data)
    return 'sha256:' + d, len(data)
index = json.load(open(os.path.join(out, 'index.json')))
amd64 = next(m for m in index['manifests'] if m.get('annotations', {}).get('org.opencontainers.image.ref.name') == '1')
manifest = json.loads(blob(amd64['digest']))
config = json.loads(blob(manifest['config']['digest']))
config['architecture'] = 'arm64'
config['config']['Env'] = [e if not e.startswith('IMAGE_MARKER=') else 'IMAGE_MARKER=wrong-platform'
                           for e in config['config']['Env']]
cdigest, csize = put(json.dumps(config).encode())
manifest['config'] = dict(manifest['config'], digest=cdigest, size=csize)
mdigest, msize = put(json.dumps(manifest).encode())
mt = 'application/vnd.oci.image.manifest.v1+json'
lst = {'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.index.v1+json', 'manifests': [
    {'mediaType': mt, 'digest': mdigest, 'size': msize, 'platform': {'architecture': 'arm64', 'os': 'linux'}},
    {'mediaType': mt, 'digest': amd64['digest'], 'size': amd64['size'], 'platform': {'architecture': 'amd64', 'os': 'linux'}},
]}
ldigest, lsize = put(json.dumps(lst).encode())
index['manifests'].append({'mediaType': 'application/vnd.oci.image.index.v1+json', 'digest': ldigest, 'size': lsize,
                           'annotations': {'org.opencontainers.image.ref.name': 'list'}})
with open(os.path.join(out, 'index.json'), 'w') as f: json.dump(index, f)
EOF
}

# registry_start DIR ROOTFS: a registry whose files (TLS, htpasswd, config, storage, log) are in
# DIR, holding the test image. Sets registry_ca (the CA certificate, PEM, for the shim's
# `registry_ca`) and registry_env: the tests' VAR=VALUE list of COVE_REGISTRY (host:port),
# COVE_REGISTRY_USER, COVE_REGISTRY_PASSWORD, COVE_REGISTRY_IMAGE (tag 1),
# COVE_REGISTRY_IMAGE_DOCKER and COVE_REGISTRY_IMAGE_LIST. Nothing is exported.
registry_start() {
  registry_dir=$1
  local rootfs=$2 layout tls user password deadline code start tag format
  for tool in /usr/bin/docker-registry skopeo umoci htpasswd openssl; do
    command -v "$tool" >/dev/null || die "$tool not found (tools/deps.sh installs docker-registry, skopeo, umoci, apache2-utils)"
  done
  [[ $registry_port =~ ^[0-9]+$ ]] || die "COVE_E2E_REGISTRY_PORT must be a port number"
  [[ -z $(ss -Hltn "sport = :$registry_port") ]] || die "something already listens on port $registry_port (the test registry's port; set COVE_E2E_REGISTRY_PORT)"
  layout=$(registry_layout "$rootfs") || exit 1

  tls=$registry_dir/tls
  mkdir -p "$tls" "$registry_dir/storage"
  # A CA and a server certificate for 127.0.0.1 and localhost (EC P-256, 2 days).
  {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -subj "/CN=cove e2e registry CA" -keyout "$tls/ca.key" -out "$tls/ca.crt" \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign &&
      openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -subj "/CN=127.0.0.1" -keyout "$tls/server.key" -out "$tls/server.csr" &&
      openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
        -days 2 -out "$tls/server.crt" \
        -extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n')
  } >"$registry_dir/openssl.log" 2>&1 || { cat "$registry_dir/openssl.log" >&2; die "openssl could not make the registry's certificates"; }
  # skopeo's --cert-dir takes every *.crt in a directory as a CA: give it one with only ours.
  mkdir -p "$registry_dir/certs.d"
  cp "$tls/ca.crt" "$registry_dir/certs.d/ca.crt"

  user=cove-e2e-$(openssl rand -hex 4)
  password=$(openssl rand -hex 16)
  htpasswd -B -b -c "$registry_dir/htpasswd" "$user" "$password" 2>/dev/null || die "htpasswd failed"

  cat >"$registry_dir/config.yml" <<EOF
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $registry_dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$registry_port
  tls:
    certificate: $tls/server.crt
    key: $tls/server.key
auth:
  htpasswd:
    realm: cove-e2e-registry
    path: $registry_dir/htpasswd
EOF
  # No REGISTRY_* variables from our environment: they would override the config.
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/docker-registry serve "$registry_dir/config.yml" \
    </dev/null >>"$registry_dir/registry.log" 2>&1 &
  registry_pid=$!
  registry_pid_start=$(shim_start_time "$registry_pid")
  echo "$registry_pid $registry_pid_start" >"$registry_dir/registry.pid"

  deadline=$((SECONDS + 30))
  while :; do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$tls/ca.crt" \
      -u "$user:$password" "https://127.0.0.1:$registry_port/v2/" || true)
    [[ $code == 200 ]] && break
    if ! kill -0 "$registry_pid" 2>/dev/null || ((SECONDS >= deadline)); then
      tail -n 30 "$registry_dir/registry.log" >&2
      die "the test registry on 127.0.0.1:$registry_port did not answer /v2/ with 200 (last status '$code')"
    fi
    sleep 0.1
  done

  start=$SECONDS
  for tag in 1 1-docker list; do
    format=() src=$tag
    case $tag in
      1-docker) format=(--format v2s2) src=1 ;;
      list) format=(--all) ;;
    esac
    skopeo copy --quiet "${format[@]}" --dest-creds "$user:$password" --dest-cert-dir "$registry_dir/certs.d" \
      "oci:$layout:$src" "docker://127.0.0.1:$registry_port/$registry_repo:$tag" >>"$registry_dir/push.log" 2>&1 ||
      { tail -n 20 "$registry_dir/push.log" >&2; die "skopeo could not push $registry_repo:$tag to the test registry"; }
  done
  log "test registry on 127.0.0.1:$registry_port (pid $registry_pid): pushed $registry_repo:{1,1-docker,list} in $((SECONDS - start)) s"

  registry_ca=$tls/ca.crt
  registry_env=(
    "COVE_REGISTRY=127.0.0.1:$registry_port"
    "COVE_REGISTRY_USER=$user"
    "COVE_REGISTRY_PASSWORD=$password"
    "COVE_REGISTRY_IMAGE=127.0.0.1:$registry_port/$registry_repo:1"
    "COVE_REGISTRY_IMAGE_DOCKER=127.0.0.1:$registry_port/$registry_repo:1-docker"
    "COVE_REGISTRY_IMAGE_LIST=127.0.0.1:$registry_port/$registry_repo:list"
  )
}

# registry_stop: stops the registry this shell started (by pid, if it is still that process).
registry_stop() {
  local deadline
  [[ -n $registry_pid ]] || return 0
  if [[ -n $registry_pid_start && $(shim_start_time "$registry_pid") == "$registry_pid_start" ]]; then
    kill -TERM "$registry_pid" 2>/dev/null || true
    deadline=$((SECONDS + 5))
    while [[ $(shim_start_time "$registry_pid") == "$registry_pid_start" ]] && ((SECONDS < deadline)); do sleep 0.1; done
    [[ $(shim_start_time "$registry_pid") == "$registry_pid_start" ]] && kill -KILL "$registry_pid" 2>/dev/null
  fi
  wait "$registry_pid" 2>/dev/null || true
  registry_pid=
}

# Run directly: a check by hand (see the header), or the image build of registry_layout.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  if [[ ${1:-} == build-layout && $# == 4 ]]; then
    registry_build_layout "$2" "$3" "$4"
    exit 0
  fi
  [[ ${1:-} == check ]] || { echo "usage: $0 check   (as root)" >&2; exit 2; }
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  # shellcheck source=lib.sh
  source "$here/lib.sh"
  ((EUID == 0)) || die "must run as root"
  check_dir=$(mktemp -d /var/tmp/cove-e2e-registry.XXXXXX)
  trap 'registry_stop; rm -rf "$check_dir"' EXIT
  registry_start "$check_dir" "$("$here/../../../rootfs-builder/build-base.sh")"
  declare "${registry_env[@]}"
  for image in "$COVE_REGISTRY_IMAGE" "$COVE_REGISTRY_IMAGE_DOCKER" "$COVE_REGISTRY_IMAGE_LIST"; do
    skopeo inspect --creds "$COVE_REGISTRY_USER:$COVE_REGISTRY_PASSWORD" --cert-dir "$check_dir/certs.d" \
      "docker://$image" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], d["Architecture"], len(d["Layers"]), "layers", [e for e in d["Env"] if e.startswith("IMAGE_")])' "$image"
  done
  code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$registry_ca" -u "$COVE_REGISTRY_USER:wrong" "https://$COVE_REGISTRY/v2/")
  [[ $code == 401 ]] || die "wrong password gave $code, not 401"
  log "check ok"
fi
