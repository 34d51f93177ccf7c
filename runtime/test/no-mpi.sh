#!/usr/bin/env bash
# MPI is optional: libmeshrt loads libmpi only when a job uses MPI
# (runtime/lib/MpiApi.h). Hides libmpi the way a machine without Open MPI
# lacks it: MESHRT_MPI_LIBRARY names a file that does not exist, so any
# attempt to load MPI fails; and checks that nothing links it.
#   1. neither libmeshrt nor PROGRAM has libmpi among its NEEDED libraries
#      (readelf -d), so the loader never maps it;
#   2. PROGRAM (no-fault) on 2 processes started by envrun.sh (RANK,
#      WORLD_SIZE, MASTER_ADDR/PORT: torchrun's and Kubernetes' variables)
#      runs to the end on gloo;
#   3. under mpirun the same program fails with the loader's message, naming
#      the library and what to do;
#   4. started alone (no launcher: a world of one, which joins through MPI)
#      it fails naming the variables that start it without MPI.
#   no-mpi.sh LIBMESHRT PROGRAM LAUNCH_DIR MPIEXEC
set -uo pipefail
lib=$1 prog=$2 launch=$3 mpiexec=$4
fail() { echo "FAIL: $*"; exit 1; }
for f in "$lib" "$prog"; do
  needed=$(readelf -d "$f" | grep NEEDED)
  echo "$needed" | grep -q libmpi && fail "$f needs libmpi: $needed"
  echo "ok: $(basename "$f") does not link libmpi"
done
hidden=/nonexistent/libmpi.so.40
out=$(MESHRT_MPI_LIBRARY=$hidden MESHRT_TIMEOUT_S=60 "$launch/envrun.sh" 2 "$prog" no-fault 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "the job without MPI exited with $rc: $out"
echo "ok: 2 processes under envrun.sh ran on gloo with libmpi hidden"
out=$(MESHRT_MPI_LIBRARY=$hidden "$mpiexec" -n 1 "$prog" no-fault 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "mpirun with libmpi hidden exited 0: $out"
echo "$out" | grep -q "an MPI launcher started this process: cannot load the MPI library ($hidden)" ||
  fail "mpirun with libmpi hidden: unexpected message: $out"
echo "ok: under mpirun with libmpi hidden: $(echo "$out" | grep -m1 'cannot load the MPI library')"
out=$(env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT \
  $(env | grep -oE '^(OMPI|PMIX|PMI|MV2|I_MPI|SLURM)_[A-Za-z0-9_]*' | sed 's/^/-u /') \
  MESHRT_MPI_LIBRARY=$hidden "$prog" no-fault 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "a process started alone with libmpi hidden exited 0: $out"
echo "$out" | grep -q "no launcher started this process.*set RANK=0, WORLD_SIZE=1, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT" ||
  fail "alone with libmpi hidden: unexpected message: $out"
echo "ok: started alone with libmpi hidden: the message names RANK/WORLD_SIZE"
echo "PASS"
