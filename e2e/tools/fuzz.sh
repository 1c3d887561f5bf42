#!/usr/bin/env bash
# fuzz.sh <package> <target> <fuzztime> <minimizetime>: runs one fuzz target. A run that fails
# with "context deadline exceeded" and writes no failing input is Go's fuzzing coordinator
# racing its own -fuzztime deadline (go.dev/issue/75804, fixed in Go 1.27), not a finding: it
# is run once more. A failing input written, or a second failure, fails.
set -euo pipefail
pkg=$1 target=$2 fuzztime=$3 minimize=$4
corpus=$pkg/testdata/fuzz/$target
inputs() { if [ -d "$corpus" ]; then find "$corpus" -type f | sort; fi; }

run() {
  go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "./$pkg" 2>&1 | tee "$out"
  return "${PIPESTATUS[0]}"
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
before=$(inputs)
if run; then exit 0; fi
if [ "$(inputs)" = "$before" ] && grep -q '^    context deadline exceeded$' "$out"; then
  echo "fuzz.sh: $target stopped on Go's fuzztime deadline race with no failing input (go.dev/issue/75804); running it again"
  run
  exit
fi
exit 1
