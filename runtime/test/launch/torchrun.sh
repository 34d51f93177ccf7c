#!/usr/bin/env bash
# Runs a program on N processes under Debian's torchrun (python3-torch:
# python3 -m torch.distributed.run), the way DeviceMesh users launch, with
# every MPI launcher variable removed so that the runtime meets its peers
# through its own store (MASTER_PORT + 1).
#   torchrun.sh N PROGRAM [ARGS...]
set -euo pipefail
N=$1; shift
PY=/usr/bin/python3
if ! $PY -c 'import torch.distributed.run' 2>/dev/null; then
  echo "torchrun.sh: Debian's python3-torch is not installed (scripts/bootstrap.sh installs it)" >&2
  exit 2
fi
for v in $(env | grep -oE '^(OMPI|PMIX|PMI|MV2|I_MPI|SLURM)_[A-Za-z0-9_]*' || true); do unset "$v"; done
# Two free ports in a row: torchrun's agent takes MASTER_PORT, our store the next.
PORT=$($PY - <<'PY'
import socket, random
for _ in range(200):
    p = random.randint(20000, 60000)
    try:
        for q in (p, p + 1):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass
PY
)
# Under Debian's Python 3.11, torchrun needs --redirects/--tee; output is
# teed with a "[rank]:" prefix.
exec $PY -m torch.distributed.run --nproc_per_node="$N" --master_addr=127.0.0.1 \
  --master_port="$PORT" --redirects 1 --tee 1 --no_python "$@"
