#!/usr/bin/env bash
# Runs meshrt-gpu-tests' "mpi-backend" scenario on N ranks against the
# emulated CUDA driver with a trace per rank, then checks that the
# stream-ordered collectives on the MPI backend synchronised the stream
# before staging (check-staging-trace.py).
#
#   run-staging-trace.sh TRACE_DIR N -- COMMAND...
set -u
dir=$1 n=$2
shift 2
[ "$1" = "--" ] && shift
rm -rf "$dir" && mkdir -p "$dir"
MESHRT_EMU_TRACE="$dir/trace.%r" "$@" || {
  echo "FAIL: the program exited with $?"; exit 1; }
exec python3 "$(dirname "$0")/check-staging-trace.py" "$dir" "$n"
