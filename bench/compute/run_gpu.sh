#!/usr/bin/env bash
# bench/compute/run_gpu.sh: bench/compute on one NVIDIA GPU, our kernels
# compiled with mesh-compile --target=cuda against the same computation in
# PyTorch on that GPU (f32, TF32 off on both sides). Runs ON the GPU machine,
# from the pack bench/compute/gpu_pack.sh writes (.gpu/compute/, which has a
# copy of this script): bash .gpu/compute/run_gpu.sh [KERNEL...]
#
# First every kernel is checked: ours once (compute-bench NAME 1 OUT.bin)
# against torch in float64 on the GPU, within 1e-4 of the largest value (the
# CPU bench's bound), torch-f32's error printed beside it. Then ROUNDS rounds,
# ours and torch in alternating order: ours one process per kernel, torch one
# process for all kernels (starting torch on a GPU takes seconds), each
# taking the median of CALLS calls after two warm-up calls (ours: the time
# around each call, which synchronises at its end; torch: the call and
# torch.cuda.synchronize()). Prints per kernel the median over rounds of
# each one's rate (GFLOP/s or GB/s, as run.sh counts them) and of the
# per-round ratio ours / torch, with its min-max. A kernel that fails (ours
# crashes, or a check mismatches) is reported FAIL/MISMATCH and the others go
# on; the exit status is 1 then. No round starts that would end past
# BUDGET_S seconds from the start, judged by the last one (the device tool's
# run is short; scripts/gpu-device-run.sh gives this 300 s).
# Env: ROUNDS=5 CALLS=20 BUDGET_S=180 PY=python3 PEER_DEVICE=cuda PACK=dir
# OUT=dir (the table, the checks and the raw times also go to
# OUT/compute-table.txt).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -n "${PACK:-}" ]; then P=$PACK
elif [ -x "$HERE/compute-bench" ]; then P=$HERE
else P=$(cd "$HERE/../.." && pwd)/.gpu/compute; fi
[ -x "$P/compute-bench" ] || { echo "run_gpu: no pack in $P (bench/compute/gpu_pack.sh)"; exit 2; }
PY=${PY:-python3}
ROUNDS=${ROUNDS:-5} CALLS=${CALLS:-20} BUDGET_S=${BUDGET_S:-180}
export PEER_DEVICE=${PEER_DEVICE:-cuda}
# The pack's libraries for our driver only: torch keeps the CUDA libraries
# it was built with.
OURS_LD="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bench() { LD_LIBRARY_PATH=$OURS_LD timeout 120 "$P/compute-bench" "$@"; }
# cuBLASLt, which the runtime opens at the first product: the toolkit's,
# else PyTorch's wheel's.
if [ -z "${MESHRT_CUBLASLT_LIBRARY:-}" ]; then
  lt=$(ls /usr/local/cuda/lib64/libcublasLt.so.13 /usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so.13 2>/dev/null | head -1)
  [ -n "$lt" ] || lt=$("$PY" -c 'import nvidia.cublas, os; d = os.path.join(list(nvidia.cublas.__path__)[0], "lib"); print(os.path.join(d, sorted(f for f in os.listdir(d) if f.startswith("libcublasLt.so"))[0]))' 2>/dev/null)
  [ -n "$lt" ] || lt=$(find /usr /opt -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
  [ -n "$lt" ] && export MESHRT_CUBLASLT_LIBRARY=$lt
fi
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
R=$W
J=$P/kernels.json
if [ $# -gt 0 ]; then KERNELS=("$@"); else
  mapfile -t KERNELS < <("$PY" -c "import json,sys; print('\n'.join(k['name'] for k in json.load(open(sys.argv[1]))))" "$J")
fi
start=$SECONDS
echo "=== bench/compute on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo '?'); cuBLASLt ${MESHRT_CUBLASLT_LIBRARY:-(default search)}"
grep -E '^(commit|sizes|compile):' "$P/MANIFEST" 2>/dev/null

echo "=== checks (ours and torch-f32 against torch-f64 on the GPU)"
: > "$R/checks"
pairs=()
for k in "${KERNELS[@]}"; do
  if bench "$k" 1 "$W/$k.bin" > "$W/$k.line" 2> "$W/$k.err"; then
    pairs+=("$k" "$W/$k.bin")
  else
    echo "$k: FAIL (ours exited with $?: $(tail -c 300 "$W/$k.err" | tr '\n' ' '))" | tee -a "$R/checks"
  fi
done
if [ ${#pairs[@]} -gt 0 ]; then
  timeout 300 "$PY" "$P/peers.py" "$J" check "${pairs[@]}" 2> "$W/check.err" | tee -a "$R/checks"
  [ -s "$W/check.err" ] && grep -v -i 'warn' "$W/check.err" | tail -5
fi
rm -f "$W"/*.bin
echo "=== timing: up to $ROUNDS rounds, $CALLS calls per process ($((SECONDS - start)) s so far)"
: > "$R/times"
names=$(IFS=,; echo "${KERNELS[*]}")
ours() {   # round $1: each kernel in a process of its own
  for k in "${KERNELS[@]}"; do
    out=$(bench "$k" "$CALLS" 2>> "$W/ours.err") || out="$k FAIL - -"
    echo "$1 ours $out" >> "$R/times"
  done
}
torch() {  # round $1: all kernels in one process
  timeout 300 "$PY" "$P/peers.py" "$J" time "$names" torch "$CALLS" 2>> "$W/torch.err" |
    sed "s/^/$1 torch /" >> "$R/times"
}
rounds=0 last=0
for r in $(seq 1 "$ROUNDS"); do
  # Another round only if one more as long as the last still fits.
  if [ "$r" -gt 1 ] && [ $((SECONDS - start + last)) -gt "$BUDGET_S" ]; then
    echo "(stopped after $rounds rounds: BUDGET_S=$BUDGET_S s)"; break
  fi
  t0=$SECONDS
  if [ $((r % 2)) = 1 ]; then ours "$r"; torch "$r"; else torch "$r"; ours "$r"; fi
  rounds=$r last=$((SECONDS - t0))
  echo "round $r: $last s ($((SECONDS - start)) s so far)"
done
for f in ours torch; do
  [ -s "$W/$f.err" ] && { echo "($f stderr, last lines:)"; grep -v -i 'warn' "$W/$f.err" | tail -5; }
done

"$PY" - "$R/times" "$R/checks" "${KERNELS[@]}" <<'PYEOF' | tee "$R/table"
import collections, statistics, sys
times, checks, names = sys.argv[1], sys.argv[2], sys.argv[3:]
rate = collections.defaultdict(dict)   # (kernel, round) -> who -> rate
unit, failed = {}, collections.defaultdict(set)
for line in open(times):
    f = line.split()
    if len(f) != 6:
        continue
    r, who, name, sec, val, u = f
    if sec == "FAIL":
        failed[name].add(who)
    elif val != "-":
        rate[(name, r)][who] = float(val)
        unit[name] = u
status = {}
for line in open(checks):
    name, _, rest = line.partition(": ")
    if name in names:
        status[name] = "ok" if rest.rstrip().endswith(": ok") else ("FAIL" if rest.startswith("FAIL") else "MISMATCH")
print(f"{'kernel':22} {'unit':8} {'ours':>10} {'torch':>10} {'ours/torch':>11} {'min-max':>12}  check")
bad = 0
for n in names:
    rounds = [v for (m, _), v in rate.items() if m == n]
    med = {}
    for w in ("ours", "torch"):
        xs = [x[w] for x in rounds if w in x]
        med[w] = statistics.median(xs) if xs else None
    ratios = [x["ours"] / x["torch"] for x in rounds if "ours" in x and "torch" in x and x["torch"] > 0]
    fmt = lambda v, w: f"{v:10.2f}" if v is not None else f"{'FAIL' if w in failed[n] else '-':>10}"
    rr = f"{statistics.median(ratios):11.2f} {min(ratios):5.2f}-{max(ratios):<6.2f}" if ratios else f"{'-':>11} {'-':>12}"
    st = status.get(n, "FAIL")
    bad += st != "ok" or med["ours"] is None or med["torch"] is None
    print(f"{n:22} {unit.get(n, '-'):8} {fmt(med['ours'], 'ours')} {fmt(med['torch'], 'torch')} {rr}  {st}")
print("(ours/torch > 1: ours faster; rates are medians over rounds of per-process medians)")
sys.exit(1 if bad else 0)
PYEOF
rc=${PIPESTATUS[0]}
if [ -n "${OUT:-}" ]; then   # one file (the device tool brings back few)
  mkdir -p "$OUT"
  { cat "$R/table"; echo; echo "checks:"; cat "$R/checks"; echo; echo "times (round who kernel s rate unit):"
    cat "$R/times"; } > "$OUT/compute-table.txt"
fi
echo "=== $rounds rounds in $((SECONDS - start)) s; exit $rc"
exit "$rc"
