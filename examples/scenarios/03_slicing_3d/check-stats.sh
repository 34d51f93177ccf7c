#!/usr/bin/env bash
# Runs scenario 3 with MESHRT_STATS=1 and checks what the runtime reports at
# shut-down: exactly SPLITS communicator splits, one per distinct (mesh,
# ordered axes) the program uses, however many collectives ran.
#
#   check-stats.sh SPLITS -- mpirun -n 8 build/bin/mesh-scenario-slicing-3d
#   check-stats.sh SPLITS -- runtime/test/launch/torchrun.sh 8 build/bin/...
#
# Prints the program's lines in rank order and the runtime's stats line;
# exits non-zero when the program fails or the count differs.
set -uo pipefail
[ $# -ge 3 ] && [ "$2" = -- ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
splits=$1
shift 2
err=$(mktemp)
out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT

MESHRT_STATS=1 "$@" > "$out" 2> "$err"
rc=$?
# torchrun (--tee) starts each line with "[default<rank>]:"; mpirun adds
# nothing.
sed -i -E 's/^\[[a-z]*[0-9]+\]://' "$out" "$err"
# "rank N ..." lines from 8 processes arrive in any order; show them by rank
# (stable, so each rank's own lines keep their order).
sort -s -t' ' -k2,2n "$out"
grep '^meshrt: stats:' "$err"
grep -v '^meshrt: stats:' "$err" >&2

fail=0
if [ $rc -ne 0 ]; then
  echo "scenario 3: the program exited with $rc" >&2
  fail=1
fi
reports=$(grep -c '^rank [0-9]*: .*splits=' "$out")
if [ "$reports" -eq 0 ]; then
  echo "scenario 3: no rank reported its counters" >&2
  fail=1
fi
# The runtime prints its counters once, from rank 0, at meshrt_finalize.
stats=$(grep '^meshrt: stats:' "$err")
if ! grep -q " splits=$splits " <<<"$stats"; then
  echo "scenario 3: MESHRT_STATS reported '${stats:-nothing}', expected splits=$splits" >&2
  fail=1
fi
if [ $fail -eq 0 ]; then
  echo "scenario 3 (3-D slicing): PASSED ($reports ranks exact; MESHRT_STATS: splits=$splits, one per distinct (mesh, axes))"
else
  echo "scenario 3 (3-D slicing): FAILED"
fi
exit $fail
