#!/usr/bin/env bash
# fuzz.sh <package> <target> <fuzztime> <minimizetime>: runs one fuzz target. A run that fails
# with "context deadline exceeded" and writes no failing input is Go's fuzzing coordinator
# racing its own -fuzztime deadline (go.dev/issue/75804, fixed in Go 1.27), not a finding: it
# is run once more, and the first run's output is left out so that its "--- FAIL" line is not
# read as a failure. A failing input written, or a second failure, fails.
set -euo pipefail
pkg=$1 target=$2 fuzztime=$3 minimize=$4
corpus=$pkg/testdata/fuzz/$target
inputs() { if [ -d "$corpus" ]; then find "$corpus" -type f | sort; fi; }

run() {
  go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "./$pkg" >"$out" 2>&1
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
before=$(inputs)
if run; then cat "$out"; exit 0; fi
if [ "$(inputs)" = "$before" ] && grep -q '^    context deadline exceeded$' "$out"; then
  echo "fuzz.sh: $target stopped on Go's fuzztime deadline race with no failing input (go.dev/issue/75804); running it again"
  rc=0
  run || rc=$?
  cat "$out"
  exit "$rc"
fi
cat "$out"
exit 1
