#!/usr/bin/env bash
# Runs meshrt-gpu-tests' "stream" scenario on N ranks against the emulated
# CUDA driver and NCCL with a trace per rank, then checks the traces.
#
#   run-emulated-gpu.sh TRACE_DIR N DEVICES -- COMMAND...
set -u
dir=$1 n=$2 devices=$3
shift 3
[ "$1" = "--" ] && shift
rm -rf "$dir" && mkdir -p "$dir"
MESHRT_EMU_TRACE="$dir/trace.%r" FAKE_CUDA_DEVICES=$devices "$@" || {
  echo "FAIL: the program exited with $?"; exit 1; }
exec python3 "$(dirname "$0")/check-emu-trace.py" "$dir" "$n" "$devices"
