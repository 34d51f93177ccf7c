#!/usr/bin/env bash
# bench/compute/run.sh: the computation of compiled programs against numpy
# and torch, one thread each (issue 28).
#
# gen.py writes the kernels (matmul 256/512/1024, matmul + bias + ReLU,
# attention-shaped batch_matmuls, an 8-op elementwise chain, row softmax,
# layer norm, GELU, a sum of a whole matrix, and one GPT block of bench/partition/gpt.py at
# H = 256 / 4 heads and H = 1024 / 16 heads, B = 2, S = 128), each a
# func.func on tensors; mesh-compile -c (default target, -O2, default
# --cpu) builds them and driver.cpp times one per process. peers.py runs the
# same computation in numpy and torch on the same inputs.
#
# First every result is checked (ours against numpy, or against torch in f64
# for the GPT blocks), then ROUNDS rounds, each running ours, numpy and torch
# once per kernel in a rotated order, each process taking the median of
# CALLS calls (the Jacobi step also against a plain C loop, -O3
# -march=native, in driver.cpp). Prints per kernel the median over rounds of each one's rate
# and of the per-round ratio ours / best peer.
# Usage: bench/compute/run.sh [KERNEL...]   (env: ROUNDS=5 CALLS=7 BUILD_DIR KEEP=dir)
#
# On a GPU: bench/compute/gpu_pack.sh builds the same kernels (larger, plus
# gpt_xl) with mesh-compile --target=cuda and driver.cpp -DMESH_GPU into
# .gpu/compute/; on the GPU machine bash .gpu/compute/run_gpu.sh checks and
# times them against torch on that GPU (peers.py with PEER_DEVICE=cuda).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
W=${KEEP:-$(mktemp -d)}
mkdir -p "$W"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$W"' EXIT
"$PY" "$HERE/gen.py" "$W/kernels.mlir" "$W/kernels.json" "$W/kernels.inc"
"$BUILD/bin/mesh-compile" -c "$W/kernels.mlir" -o "$W/kernels.o"
link_driver "$W/compute-bench" "$W" "$W/kernels.o"
same_blas_kernels "$W/compute-bench" matmul256 1
if [ $# -gt 0 ]; then KERNELS=("$@"); else
  mapfile -t KERNELS < <("$PY" -c "import json,sys; print('\n'.join(k['name'] for k in json.load(open(sys.argv[1]))))" "$W/kernels.json")
fi
echo "=== checks"
for k in "${KERNELS[@]}"; do
  "$W/compute-bench" "$k" 1 "$W/$k.bin" > /dev/null
  "$PY" "$HERE/peers.py" "$W/kernels.json" check "$k" "$W/$k.bin"
done
echo "=== timing: $ROUNDS rounds, $CALLS calls per process, 1 thread"
: > "$W/times"
for r in $(seq 1 "$ROUNDS"); do
  for k in "${KERNELS[@]}"; do
    runs=(ours numpy torch)
    [ "$k" = jacobi ] && runs+=(c)
    for i in $(seq 0 $(( ${#runs[@]} - 1 ))); do
      who=${runs[$(( (i + r) % ${#runs[@]} ))]}
      if [ "$who" = ours ]; then out=$("$W/compute-bench" "$k" "$CALLS")
      elif [ "$who" = c ]; then out=$("$W/compute-bench" --c-jacobi 4096 "$CALLS")
      else out=$("$PY" "$HERE/peers.py" "$W/kernels.json" time "$k" "$who" "$CALLS"); fi
      echo "$r $who $out" >> "$W/times"
    done
  done
done
"$PY" - "$W/times" <<'PYEOF'
import collections, statistics, sys
rate = collections.defaultdict(dict)   # (kernel, round) -> who -> rate
unit = {}
for line in open(sys.argv[1]):
    r, who, name, sec, val, u = line.split()
    if val != "-":
        rate[(name, r)][who] = float(val)
        unit[name] = u
names = list(dict.fromkeys(n for n, _ in rate))
print(f"{'kernel':20} {'unit':8} {'ours':>9} {'numpy':>9} {'torch':>9} {'C loop':>9} {'ours/best':>10} {'min-max':>12}")
for n in names:
    rounds = [v for (m, _), v in rate.items() if m == n]
    med = {w: statistics.median([x[w] for x in rounds if w in x]) if any(w in x for x in rounds) else None
           for w in ("ours", "numpy", "torch", "c")}
    ratios = [x["ours"] / max(x.get("numpy", 0), x.get("torch", 0), x.get("c", 0)) for x in rounds]
    fmt = lambda v: f"{v:9.2f}" if v is not None else f"{'-':>9}"
    print(f"{n:20} {unit[n]:8} {fmt(med['ours'])} {fmt(med['numpy'])} {fmt(med['torch'])} {fmt(med['c'])} "
          f"{statistics.median(ratios):10.2f} {min(ratios):5.2f}-{max(ratios):.2f}")
PYEOF
