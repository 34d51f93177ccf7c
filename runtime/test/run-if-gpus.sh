#!/usr/bin/env bash
# Runs COMMAND only if PROBE reports at least N CUDA devices; otherwise
# passes PROBE's "SKIP: ..." message and exit code 77 on to ctest.
#
#   run-if-gpus.sh N PROBE -- COMMAND...
set -u
n=$1 probe=$2
shift 3
"$probe" --gpu-probe="$n"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
exec "$@"
