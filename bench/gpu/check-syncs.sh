#!/usr/bin/env bash
# Host synchronisations per call of a compiled function with 8 collectives:
# checks the emulated driver's traces of `meshrt-bench-gpu --parts syncs` on
# N ranks (runtime/test/run-traced.sh runs it): every call of @chain8
# (between its marks) enqueues 8 all_reduces on the shared stream and
# synchronises the host exactly once, after the last of them.
#
#   check-syncs.sh TRACE_DIR N
set -u
dir=$1 n=$2
for ((r = 0; r < n; r++)); do
  t="$dir/trace.$r"
  got=$(awk '/^mark call / {on = 1; colls = 0; syncs = 0; after = 0; next}
             /^mark end/ && on {print colls, syncs, after; on = 0; next}
             on && /^collective all_reduce / {colls++; after = 0}
             on && /^sync / {syncs++; after = (colls == 8)}' "$t" | sort | uniq -c)
  want="     10 8 1 1"
  if [ "$got" != "$want" ]; then
    printf 'FAIL: rank %d: calls by (collectives, syncs, sync after the last): %s\n' "$r" "$got"
    exit 1
  fi
done
echo "PASS: $n ranks, 10 calls each: 8 all_reduces and 1 host synchronisation per call"
