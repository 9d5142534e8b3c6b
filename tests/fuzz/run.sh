#!/usr/bin/env bash
# libFuzzer targets for the agent's and the shim's parsers, built with clang++-14 (ASan + UBSan) into build/fuzz/
# and run for a fixed time each; fails on any crash, leak, sanitizer report or broken invariant.
#
#   envelope   Connect envelope reader   guest-agent/rpc/envelope.cpp
#   multipart  multipart/form-data parser guest-agent/files/multipart.cpp (+ media_type, system/go_errors)
#   host_route edge Host/header routing   host-shim/edge/host_route.cpp
#
# Usage: tests/fuzz/run.sh [target...]      (default: all)
# Env:   FUZZ_TIME  seconds per target (default 60)     CXX_FUZZ  compiler (default clang++-14)
#        BUILD      build dir (default <repo>/build); output in $BUILD/fuzz/
# Corpora grow in $BUILD/fuzz/corpus/<target>/ (kept between runs), seeded from
# tests/fuzz/seeds/<target>/; a crashing input lands in $BUILD/fuzz/artifacts/<target>/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD:-$repo/build}
[[ $build = /* ]] || build=$repo/$build
out=$build/fuzz
cxx=${CXX_FUZZ:-clang++-14}
time=${FUZZ_TIME:-60}
agent=$repo/guest-agent
shim=$repo/host-shim

log() { printf 'fuzz: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
command -v "$cxx" >/dev/null || die "$cxx not found (tools/deps.sh installs clang-14 and libclang-rt-14-dev)"

declare -A sources=(
  [envelope]="$agent/rpc/envelope.cpp"
  [multipart]="$agent/files/multipart.cpp $agent/files/media_type.cpp $agent/system/go_errors.cpp"
  [host_route]="$shim/edge/host_route.cpp"
)
targets=("$@")
((${#targets[@]})) || targets=(envelope multipart host_route)

flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=all -I "$agent" -I "$shim")
mkdir -p "$out"
for t in "${targets[@]}"; do
  [[ -n ${sources[$t]-} ]] || die "unknown target: $t (known: ${!sources[*]})"
  bin=$out/$t-fuzz
  # shellcheck disable=SC2086  # the source lists are word lists
  deps=("$here/$t"_fuzz.cpp ${sources[$t]})
  stale=0
  [[ -x $bin ]] || stale=1
  for d in "${deps[@]}" "$here/run.sh" "$agent"/rpc/envelope.hpp "$agent"/files/*.hpp "$shim"/edge/host_route.hpp; do
    [[ $d -nt $bin ]] && stale=1
  done
  if ((stale)); then
    log "build $t"
    "$cxx" "${flags[@]}" "${deps[@]}" -o "$bin.tmp"
    mv "$bin.tmp" "$bin"
  fi
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
summary=()
for t in "${targets[@]}"; do
  corpus=$out/corpus/$t artifacts=$out/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  [[ -d $here/seeds/$t ]] && seeds=("$here/seeds/$t")
  log "run $t for ${time}s (corpus $corpus)"
  logfile=$out/$t.log
  if "$out/$t-fuzz" -max_total_time="$time" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" >"$logfile" 2>&1; then
    execs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$logfile")
    cov=$(grep -oE 'cov: [0-9]+' "$logfile" | tail -n 1 || true)
    summary+=("$t: ok, ${execs:-?} executions, ${cov:-cov: ?}, corpus $(find "$corpus" -type f | wc -l) inputs")
  else
    failed+=("$t")
    summary+=("$t: FAILED (log $logfile, artifacts $artifacts/)")
    grep -E 'ERROR|CHECK failed|runtime error|SUMMARY|Test unit written|^MS:|round trip' "$logfile" | head -n 20 >&2 || true
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
((${#failed[@]} == 0)) || die "crashes in: ${failed[*]}"
