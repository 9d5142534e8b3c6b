# shellcheck shell=bash
# Shared by the e2e runners (tests/e2e/run.sh, shim/run.sh, interpreter/run.sh); sourced, with
# `log` and `die` defined by the runner.

# npm ci in DIR when its node_modules is missing, older than the lockfile, or lacks a MODULE.
e2e_npm_ci_if_stale() {
  local dir=$1 stale=0 module
  shift
  local stamp=$dir/node_modules/.package-lock.json
  [[ -f $stamp && ! $dir/package-lock.json -nt $stamp ]] || stale=1
  for module in "$@"; do [[ -d $dir/node_modules/$module ]] || stale=1; done
  if ((stale)); then
    log "npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund >&2)
  fi
}

# Sets the array `tests`: DIR/*.test.mjs, or DIR/NAME.test.mjs for each NAME given. Files are
# listed by bash: Node 20's --test takes no globs.
e2e_test_files() {
  local dir=$1 name
  shift
  shopt -s nullglob
  tests=("$dir"/*.test.mjs)
  if (($#)); then
    tests=()
    for name in "$@"; do
      [[ -f $dir/$name.test.mjs ]] || die "no test file $dir/$name.test.mjs"
      tests+=("$dir/$name.test.mjs")
    done
  fi
  ((${#tests[@]})) || die "no test files in $dir"
}
