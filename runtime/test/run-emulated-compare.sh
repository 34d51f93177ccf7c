#!/usr/bin/env bash
# Runs one program twice on N ranks and compares the runs: its host build on
# the MPI backend (which checks its own numbers), and its --target=cuda build
# on the NCCL backend against the emulated CUDA driver and NCCL in
# EMULATED_DIR (libcuda.so.1, libcudart.so.13, libnccl.so.2; N emulated
# devices), each with a collective trace (MESHRT_TRACE), the second also with
# the driver's trace (MESHRT_EMU_TRACE). Both runs must exit 0: device memory
# is unreadable from the host under the emulation, so a host access to it
# faults. Then check-emulated-run.py compares the traces (CHECK_OPTION...
# are passed on to it).
#
#   run-emulated-compare.sh DIR N EMULATED_DIR [CHECK_OPTION...] \
#       -- HOST_COMMAND... -- CUDA_COMMAND...
set -u
dir=$1 n=$2 emulated=$3
shift 3
check=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do check+=("$1"); shift; done
[ $# -gt 0 ] && shift
host=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do host+=("$1"); shift; done
[ $# -gt 0 ] && shift
cuda=("$@")
if [ ${#host[@]} -eq 0 ] || [ ${#cuda[@]} -eq 0 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
rm -rf "$dir" && mkdir -p "$dir/host" "$dir/cuda"

echo "=== host build, MPI backend: ${host[*]}"
MESHRT_BACKEND=mpi MESHRT_TRACE="$dir/host/rt.%r" "${host[@]}"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the host build exited with $rc"; exit 1; }

echo "=== CUDA build, NCCL backend, emulated driver: ${cuda[*]}"
LD_LIBRARY_PATH="$emulated${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  MESHRT_CUDART_LIBRARY="$emulated/libcudart.so.13" \
  MESHRT_NCCL_LIBRARY="$emulated/libnccl.so.2" FAKE_CUDA_DEVICES="$n" \
  MESHRT_BACKEND=nccl MESHRT_TRACE="$dir/cuda/rt.%r" \
  MESHRT_EMU_TRACE="$dir/cuda/emu.%r" "${cuda[@]}"
rc=$?
[ $rc -eq 0 ] || {
  echo "FAIL: the CUDA build exited with $rc under the emulated driver" \
       "(a host access to device memory faults there)"
  exit 1
}

echo "=== traces"
exec python3 "$(dirname "$0")/check-emulated-run.py" "$dir" "$n" "${check[@]}"
