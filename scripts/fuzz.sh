#!/usr/bin/env bash
# Runs every fuzz target in the repository for a fixed budget each.
# Usage: scripts/fuzz.sh [fuzztime]   (default 20000x, a count of executions)
#
# The default is a count, not a duration: with a duration, go1.26's fuzz
# coordinator sometimes reports "context deadline exceeded" as a failure when
# the deadline races a worker (golang/go#75804, fixed in go1.27). A count sets no
# deadline, so a red run always means a real failing input.
set -euo pipefail
fuzztime=${1:-20000x}
cd "$(dirname "$0")/.."
found=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  # The module that holds this package: the nearest go.mod above it.
  mod=$dir
  while [ ! -f "$mod/go.mod" ]; do mod=$(dirname "$mod"); done
  rel=./${dir#"$mod"}; rel=${rel/#.\/\//.\/}
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    found=$((found + 1))
    echo "== fuzz $target ($dir, $fuzztime)"
    (cd "$mod" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$rel")
  done
done < <(git ls-files --cached --others --exclude-standard '*_test.go' | sort)
echo "fuzz: $found target(s) run"
