#!/usr/bin/env bash
# Starts a program on N processes the way a Kubernetes PyTorchJob or a plain
# script does: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT only (no
# LOCAL_RANK, no agent that kills the others when one fails), MPI's variables
# removed. Waits for every process and exits with the first non-zero status
# (0 if all succeed); a process still running MAX_SECONDS (default 120) after
# the start is killed and counts as a hang (status 99).
#   envrun.sh N PROGRAM [ARGS...]
set -uo pipefail
N=$1; shift
MAX=${MAX_SECONDS:-120}
for v in $(env | grep -oE '^(OMPI|PMIX|PMI|MV2|I_MPI|SLURM)_[A-Za-z0-9_]*' || true); do unset "$v"; done
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pids=()
for ((r = 0; r < N; r++)); do
  RANK=$r WORLD_SIZE=$N MASTER_ADDR=127.0.0.1 MASTER_PORT=$((PORT - 1)) \
    MESHRT_STORE_PORT=${MESHRT_STORE_PORT:-$PORT} "$@" &
  pids+=($!)
done
# A watchdog of the launcher's own: a hang is a failure, never a stuck test.
( exec 2>/dev/null; sleep "$MAX"; for p in "${pids[@]}"; do kill -9 "$p" && echo "envrun.sh: killed pid $p after ${MAX}s" >&3; done ) 3>&2 &
guard=$!
disown "$guard" 2>/dev/null || true
rc=0
for p in "${pids[@]}"; do
  wait "$p"; s=$?
  [ $s -eq 137 ] && s=99
  [ $rc -eq 0 ] && rc=$s
done
pkill -P "$guard" 2>/dev/null; kill "$guard" 2>/dev/null
exit $rc
