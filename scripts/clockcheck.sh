#!/usr/bin/env bash
# The injected-clock rule, enforced (make lint): golangci-lint's forbidigo,
# configured in .golangci.yml, bans package time's clock and timers and the
# global source of math/rand in the library code of every module, outside
# the allow-list there.
#
# Usage: scripts/clockcheck.sh GOLANGCI_LINT   (the binary; make lint installs it, pinned)
#
# 1. The check must fail on scripts/testdata/plantedpolicy, a policy that
#    breaks the rule on purpose, and report each planted call, and nothing
#    in its test file.
# 2. Every module must pass.
# 3. No allow-list entry may be stale: one that matched nothing in any
#    module is an error, so the list says only what is true.
set -euo pipefail
lint=${1:?usage: scripts/clockcheck.sh GOLANGCI_LINT}
cd "$(dirname "$0")/.."
root=$PWD
run() { "$lint" run --color never -c "$root/.golangci.yml" "$@"; }

planted=./scripts/testdata/plantedpolicy
if out=$(run "$planted" 2>&1); then
  echo "clockcheck: $planted passed, but it breaks the rule on purpose:"; echo "$out"; exit 1
fi
for call in time.Now time.Sleep time.AfterFunc time.NewTimer rand.IntN; do
  grep -q "use of \`$call\` forbidden" <<<"$out" || {
    echo "clockcheck: $call in $planted was not reported:"; echo "$out"; exit 1
  }
done
if grep -q '_test\.go' <<<"$out"; then
  echo "clockcheck: a test file of $planted was reported, but tests may use real time:"; echo "$out"; exit 1
fi

mods=$(find . -name go.mod -not -path './.git/*' -printf '%h\n' | sort)
unused=$(mktemp)
trap 'rm -f "$unused"' EXIT
status=0
for mod in $mods; do
  if ! out=$(cd "$mod" && run ./... 2>&1); then
    echo "== $mod"; echo "$out"; status=1
  fi
  grep -o 'Skipped 0 issues by rules: .*' <<<"$out" | sort -u >>"$unused" || true
done
if [ "$status" != 0 ]; then
  echo 'clockcheck: the calls above bypass the injected clock or random source (allow-list: .golangci.yml)'
  exit 1
fi
# A rule unused in one module may serve another; stale is unused in all.
stale=$(sort "$unused" | uniq -c | awk -v n="$(wc -w <<<"$mods")" '$1 == n' || true)
if [ -n "$stale" ]; then
  echo "clockcheck: allow-list entries in .golangci.yml that match nothing:"; echo "$stale"; exit 1
fi
