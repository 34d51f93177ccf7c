#!/usr/bin/env bash
# The long mode of the partition equivalence tests: random programs with random
# shardings, propagated, partitioned, compiled and run on 8 ranks, each
# compared exactly with its unpartitioned self.
#   scripts/partition-stress.sh [ROUNDS] [CASES_PER_ROUND]   (default 10 x 500)
# Each round uses a new seed (printed); a failing case names itself, and
#   test/Executable/gen_partition.py out.mlir --cases N --seed S
# regenerates it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
ROUNDS=${1:-10}; CASES=${2:-500}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
       OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
total=0
for r in $(seq 1 "$ROUNDS"); do
  seed=$((1000 + r))
  python3 "$ROOT/test/Executable/gen_partition.py" "$TMP/p.mlir" --cases "$CASES" --seed "$seed" > /dev/null
  "$BUILD_DIR/bin/mesh-compile" -O1 "$TMP/p.mlir" -o "$TMP/p" \
    --mesh-opt-args="--mesh-propagate-sharding --mesh-partition"
  mpirun -n 8 "$TMP/p" || { echo "partition-stress: seed $seed failed"; exit 1; }
  total=$((total + CASES + 19))
  echo "partition-stress: seed $seed: $((CASES + 19)) cases equal on 8 ranks ($total so far)"
done
