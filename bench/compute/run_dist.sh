#!/usr/bin/env bash
# bench/compute/run_dist.sh: one GPT block (B=2, S=128, H=1024, 16 heads) on
# 2 ranks, data parallel and Megatron tensor parallel, ours (gen_dist.py's
# kernels, mesh-compile -c, run under mpirun -n 2 by driver.cpp built with
# -DMESH_DIST) against torch (peers_dist.py: 2 processes, gloo), one thread
# per rank. ROUNDS rounds, the order alternating; each process prints the
# median of CALLS steps from rank 0. Prints per plan the median step time of
# each and the median of the per-round ratios torch / ours (> 1: ours faster).
# The plans' numbers are checked elsewhere (ctest exec.gpt_*: the partitioned
# block against the unannotated one on 8 ranks); here only time is measured.
# Usage: bench/compute/run_dist.sh   (env: ROUNDS=5 CALLS=7 BUILD_DIR)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"$PY" "$HERE/gen_dist.py" "$W/dist.mlir" "$W/kernels.inc"
"$BUILD/bin/mesh-compile" -c "$W/dist.mlir" -o "$W/dist.o"
link_driver "$W/bench-dist" "$W" "$W/dist.o" -DMESH_DIST
same_blas_kernels mpirun -n 2 "$W/bench-dist" gpt_dp 1
: > "$W/times"
for r in $(seq 1 "$ROUNDS"); do
  for plan in dp tp; do
    ours() { echo "$r ours $(mpirun -n 2 "$W/bench-dist" "gpt_$plan" "$CALLS")" >> "$W/times"; }
    torch() { echo "$r torch $("$PY" "$HERE/peers_dist.py" "$plan" "$CALLS")" >> "$W/times"; }
    if [ $((r % 2)) = 1 ]; then ours; torch; else torch; ours; fi
  done
done
"$PY" - "$W/times" <<'PYEOF'
import collections, statistics, sys
t = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, who, name, sec, *_ = line.split()
    t[(name, r)][who] = float(sec)
for name in sorted({n for n, _ in t}):
    rounds = [v for (n, _), v in t.items() if n == name]
    o = statistics.median(x["ours"] for x in rounds) * 1e3
    p = statistics.median(x["torch"] for x in rounds) * 1e3
    ratios = [x["torch"] / x["ours"] for x in rounds]
    print(f"{name}: ours {o:.1f} ms/step, torch {p:.1f} ms/step, torch/ours "
          f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
PYEOF
