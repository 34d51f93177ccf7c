#!/usr/bin/env bash
# Runs the five seed scenarios of examples/scenarios on 8 CPU ranks (MPI)
# and prints what each one checked; exits non-zero if any fails.
#
#   ninja -C build mesh-scenarios       # compiles the .mlir files, links
#   examples/scenarios/run-all.sh       # runs them
#
# BUILD_DIR (default: <repo>/build) is where the programs were built, MPIRUN
# (default: mpirun) the launcher.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BIN=$BUILD_DIR/bin
MPIRUN=${MPIRUN:-mpirun}
RANKS=8

# Open MPI: allow root, more ranks than cores, yield while idle, no binding.
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
export MESHRT_TIMEOUT_S=${MESHRT_TIMEOUT_S:-60}

passed=0 failed=()
run() { # run <number> <title> <program> [command...]
  local n=$1 title=$2 program=$3
  shift 3
  echo
  echo "=== scenario $n: $title"
  echo "    $*"
  if [ ! -x "$program" ]; then
    echo "not built: $program (run: ninja -C $BUILD_DIR mesh-scenarios)"
    failed+=("$n")
    return
  fi
  if "$@"; then passed=$((passed + 1)); else failed+=("$n"); fi
}

run 1 "the tutorial's 2-D mesh (2, 4) (\"replicate\", \"shard\"): coordinates and groups" \
  "$BIN/mesh-scenario-device-mesh-2d" \
  "$MPIRUN" -n $RANKS "$BIN/mesh-scenario-device-mesh-2d"
run 2 "HSDP: one SGD step of ToyModel, sharded over \"shard\", replicated over \"replicate\"" \
  "$BIN/mesh-scenario-hsdp" \
  "$MPIRUN" -n $RANKS "$BIN/mesh-scenario-hsdp"
run 3 "3-D slicing (2, 2, 2): sub-mesh (\"replicate\", \"shard\") and \"tp\", communicators reused" \
  "$BIN/mesh-scenario-slicing-3d" \
  "$HERE/03_slicing_3d/check-stats.sh" 4 -- \
  "$MPIRUN" -n $RANKS "$BIN/mesh-scenario-slicing-3d"
run 4 "DeepSpeed-Ulysses: (data_parallel = ?, sequence_parallel = 4) attention" \
  "$BIN/mesh-scenario-ulysses" \
  "$MPIRUN" -n $RANKS "$BIN/mesh-scenario-ulysses"
run 5 "Megatron-style tensor-parallel MLP on (dp = 2, tp = 4)" \
  "$BIN/mesh-scenario-tp-mlp" \
  "$MPIRUN" -n $RANKS "$BIN/mesh-scenario-tp-mlp"

echo
if [ ${#failed[@]} -eq 0 ]; then
  echo "scenarios: $passed passed, 0 failed"
else
  echo "scenarios: $passed passed, ${#failed[@]} failed (scenario ${failed[*]})"
  exit 1
fi
