#!/usr/bin/env bash
# Runs a program against the emulated CUDA driver with a trace per rank,
# then a checker of those traces:
#
#   run-traced.sh TRACE_DIR CHECKER [ARGS...] -- PROGRAM...
#
# TRACE_DIR is emptied, PROGRAM runs with MESHRT_EMU_TRACE=TRACE_DIR/trace.%r
# and must exit 0 (a host access to device memory faults there), then
# `CHECKER TRACE_DIR ARGS...` decides.
set -u
dir=$1
shift
check=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do check+=("$1"); shift; done
[ $# -gt 0 ] && shift
rm -rf "$dir" && mkdir -p "$dir"
MESHRT_EMU_TRACE="$dir/trace.%r" "$@" || {
  echo "FAIL: the program exited with $?"; exit 1; }
exec "${check[0]}" "$dir" "${check[@]:1}"
