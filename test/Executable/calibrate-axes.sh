#!/usr/bin/env bash
# meshrt-calibrate-axes on 8 ranks, its axis-cost line checked and fed to
# mesh-auto-shard (which must read it and say which rates it used).
#   calibrate-axes.sh MPIEXEC CALIBRATE MESH_OPT INPUT.mlir
set -euo pipefail
mpiexec=$1 calibrate=$2 mesh_opt=$3 input=$4
line=$("$mpiexec" -n 8 "$calibrate" dp=2,tp=4 --bytes 65536 --rounds 3)
echo "$line"
if ! [[ $line =~ ^axis-cost=dp=[0-9.]+us:[0-9.e+-]+GB/s,tp=[0-9.]+us:[0-9.e+-]+GB/s$ ]]; then
  echo "FAIL: not an axis-cost option: '$line'" >&2
  exit 1
fi
report=$("$mesh_opt" "$input" "--mesh-auto-shard=$line explain" -o /dev/null 2>&1)
# The planned function's line (functions left alone get a line of their own).
grep -m1 "^auto-shard @.* on @" <<<"$report"
# A bad shape is a usage error.
if "$calibrate" dp=x,tp > /dev/null 2>&1; then
  echo "FAIL: a malformed shape was accepted" >&2
  exit 1
fi
echo "calibrate-axes: ok"
