#!/usr/bin/env bash
# Runs the runtime benchmarks and prints Markdown tables (as pasted into
# docs/performance.md, section "Runtime").
#
#   bench/runtime/run.sh [BUILD_DIR]        (default: build, else /tmp/rt-build)
#
# Environment: RANKS (default "1 2 4 8"; 1 rank isolates the runtime's own
# cost), SECONDS_PER_SIZE (default 2),
# MAX_BYTES (default 16777216), REPS (set-up repetitions, default 20),
# CONTROL (default 1: also time MPI_Allreduce against itself at 8 ranks),
# CHECK_RANKS (default "2 8": the cost of MESHRT_CHECK_COLLECTIVES=1, check
# off and on interleaved in one run at each of these world sizes; "" skips),
# GLOO_RANKS (default "2 8": meshrt on MPI and on gloo interleaved, the
# same mesh on two contexts; "" skips), PYTHON_RANKS (default "1 2": the
# Python package's all_reduce against the same call from C; "" skips),
# TORCH_GLOO_RANKS (default "2": under torchrun, without MPI, meshrt on gloo
# against torch.distributed on gloo, per call, and the set-up of a 2-D
# mesh's groups at 4 ranks, alternating launches; "" skips).
# Build first, e.g.:
#   cmake -S runtime -B /tmp/rt-build -G Ninja && ninja -C /tmp/rt-build -j1
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-}
if [ -z "$build" ]; then
  if [ -x "$root/build/bin/meshrt-bench-allreduce" ]; then build=$root/build
  else build=/tmp/rt-build; fi
fi
bin=$build/bin
for b in meshrt-bench-allreduce meshrt-bench-setup; do
  [ -x "$bin/$b" ] || { echo "missing $bin/$b: build the runtime first" >&2; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
# Busy-polling ranks starve each other when ranks outnumber cores.
cores=$(nproc)

echo "machine: $(nproc) cores, $(uname -m), $(mpirun --version | head -1)"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
for n in ${RANKS:-1 2 4 8}; do
  yield=0
  [ "$n" -gt "$cores" ] && yield=1
  echo
  echo "## all_reduce overhead, $n ranks (oversubscribed: $([ $yield = 1 ] && echo yes || echo no))"
  OMPI_MCA_mpi_yield_when_idle=$yield mpirun -n "$n" "$bin/meshrt-bench-allreduce" \
    --seconds-per-size "${SECONDS_PER_SIZE:-2}" --max-bytes "${MAX_BYTES:-16777216}"
done
if [ "${CONTROL:-1}" = 1 ]; then
  echo
  echo "## control: MPI_Allreduce against itself (A/A), 8 ranks: the method's noise"
  OMPI_MCA_mpi_yield_when_idle=1 mpirun -n 8 "$bin/meshrt-bench-allreduce" --control \
    --seconds-per-size "${SECONDS_PER_SIZE:-2}" --max-bytes "${MAX_BYTES:-16777216}"
fi
for n in ${CHECK_RANKS-2 8}; do
  yield=0
  [ "$n" -gt "$cores" ] && yield=1
  echo
  echo "## MESHRT_CHECK_COLLECTIVES off and on, $n ranks (oversubscribed: $([ $yield = 1 ] && echo yes || echo no))"
  OMPI_MCA_mpi_yield_when_idle=$yield mpirun -n "$n" "$bin/meshrt-bench-allreduce" --check \
    --seconds-per-size "${SECONDS_PER_SIZE:-2}" --max-bytes "${MAX_BYTES:-16777216}"
done
for n in ${GLOO_RANKS-2 8}; do
  yield=0
  [ "$n" -gt "$cores" ] && yield=1
  echo
  echo "## meshrt on MPI and on gloo, interleaved, $n ranks (oversubscribed: $([ $yield = 1 ] && echo yes || echo no))"
  OMPI_MCA_mpi_yield_when_idle=$yield mpirun -n "$n" "$bin/meshrt-bench-allreduce" --gloo \
    --seconds-per-size "${SECONDS_PER_SIZE:-2}" --max-bytes "${MAX_BYTES:-16777216}"
done
echo
echo "## communicator set-up, 8 ranks"
OMPI_MCA_mpi_yield_when_idle=1 mpirun -n 8 "$bin/meshrt-bench-setup" --reps "${REPS:-20}"
for n in ${PYTHON_RANKS-1 2}; do
  echo
  echo "## all_reduce from Python (mesh.distributed) against the same call in C, $n ranks"
  MESHRT_LIBRARY="$build/lib/libmeshrt.so" PYTHONPATH="$root/python" \
    mpirun -n "$n" /usr/bin/python3 "$root/bench/runtime/python_call_cost.py" \
    "${SECONDS_PER_SIZE:-2}"
done
torchrun=(/usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1)
for n in ${TORCH_GLOO_RANKS-2}; do
  echo
  echo "## meshrt on gloo against torch.distributed on gloo, $n ranks under torchrun"
  MESHRT_LIBRARY="$build/lib/libmeshrt.so" PYTHONPATH="$root/python" \
    "${torchrun[@]}" --nproc_per_node="$n" \
    "$root/bench/runtime/gloo_vs_torch.py" "${SECONDS_PER_SIZE:-2}" 2>/dev/null |
    sed -n 's/^\[default0\]://p'
done
if [ -n "${TORCH_GLOO_RANKS-2}" ]; then
  echo
  echo "## set-up of a (2, 2) mesh's groups and a first all_reduce on each, under torchrun (alternating launches)"
  for round in 1 2 3 4 5; do
    for which in ours torch; do
      MESHRT_LIBRARY="$build/lib/libmeshrt.so" PYTHONPATH="$root/python" \
        "${torchrun[@]}" --nproc_per_node=4 \
        "$root/bench/runtime/gloo_vs_torch.py" --setup "$which" 2>/dev/null |
        sed -n 's/^\[default0\]://p'
    done
  done
fi
