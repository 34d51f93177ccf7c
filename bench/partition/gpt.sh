#!/usr/bin/env bash
# The GPT stack of gpt.py (torch-mlir's spelling), 48 layers by default, under
# each plan (dp, tp, sp) on (dp = 2, tp = 4): our compile time and plan
# beside upstream MLIR 22's on the same program in its `shard` dialect.
#
#   ours:     build/bin/mesh-opt --mesh-propagate-sharding --mesh-partition
#             --mesh-optimize-collectives --verify-each=0
#   upstream: mlir-opt --pass-pipeline='builtin.module(func.func(
#             sharding-propagation,shard-partition))' --verify-each=0
#
# Times are the passes' own (--mlir-timing --mlir-timing-display=list), median
# of 3 runs; parsing is reported apart. The plan: collectives and bytes per
# device from --mesh-report-communication, and the collectives by kind.
#
# Usage: bench/partition/gpt.sh [OUTDIR]
#   LAYERS=48  SHAPE="--seq 128 --hidden 1024 --heads 16"  PLANS="dp tp sp"
#   MESH_OPT=build/bin/mesh-opt  MLIR_OPT=/usr/lib/llvm-22/bin/mlir-opt
# Writes OUTDIR/gpt.tsv and prints a table. About 30 seconds.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MESH_OPT=${MESH_OPT:-$ROOT/build/bin/mesh-opt}
MLIR_OPT=${MLIR_OPT:-/usr/lib/llvm-22/bin/mlir-opt}
LAYERS=${LAYERS:-48}
SHAPE=${SHAPE:-"--seq 128 --hidden 1024 --heads 16"}
PLANS=${PLANS:-"dp tp sp"}
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT" && cd "$OUT" || exit 1
cp "$MESH_OPT" ./mesh-opt.timed && MESH_OPT=$PWD/mesh-opt.timed
UP_PIPE='builtin.module(func.func(sharding-propagation,shard-partition))'
OURS=(--mesh-propagate-sharding --mesh-partition --mesh-optimize-collectives)
med3() { sort -g | sed -n 2p; }
pass_time() { awk -v p="$1" '$NF==p {print $1}'; }
breakdown() {
  grep -o -E "(mesh|shard)\.(all_[a-z_]+|reduce_scatter|update_halo)" "$1" | sed 's/^[a-z]*\.//' |
    sort | uniq -c | awk '{printf "%s%s:%s", (NR>1?",":""), $2, $1} END{if (NR==0) printf "-"}'
}

fail=0
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $LAYERS layers, $SHAPE; out: $OUT"
printf "plan\tcompiler\tprop_s\tpart_s\topt_s\tparse_s\tcollectives\tbytes_per_device\tbreakdown\n" > gpt.tsv
for plan in $PLANS; do
  python3 "$HERE/gpt.py" --plan "$plan" --layers "$LAYERS" $SHAPE > "ours_$plan.mlir"
  python3 "$HERE/gpt.py" --plan "$plan" --layers "$LAYERS" $SHAPE --dialect shard > "up_$plan.mlir"
  # Ours: the plan, its report, and that the output verifies.
  "$MESH_OPT" "${OURS[@]}" --mesh-report-communication "ours_$plan.mlir" \
    -o "ours_$plan.out.mlir" 2> "ours_$plan.report" || { echo "ours failed on $plan"; fail=1; continue; }
  "$MESH_OPT" "ours_$plan.out.mlir" -o /dev/null || { echo "our $plan output does not verify"; fail=1; }
  read -r coll bytes < <(grep "total:" "ours_$plan.report" | tail -1 |
    sed -E 's/.*total: ([0-9]+) collectives, ([0-9]+) bytes.*/\1 \2/')
  P=(); Q=(); R=(); S=()
  for round in 1 2 3; do
    t=$("$MESH_OPT" "${OURS[@]}" --verify-each=0 "ours_$plan.mlir" -o /dev/null \
        --mlir-timing --mlir-timing-display=list 2>&1)
    P+=($(echo "$t" | pass_time PropagateSharding)); Q+=($(echo "$t" | pass_time Partition))
    R+=($(echo "$t" | pass_time OptimizeCollectives)); S+=($(echo "$t" | pass_time Parser))
  done
  printf "%s\tours\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$plan" \
    "$(printf '%s\n' "${P[@]}" | med3)" "$(printf '%s\n' "${Q[@]}" | med3)" \
    "$(printf '%s\n' "${R[@]}" | med3)" "$(printf '%s\n' "${S[@]}" | med3)" \
    "$coll" "$bytes" "$(breakdown "ours_$plan.out.mlir")" >> gpt.tsv
  # Upstream: its first error, or its times and collectives.
  if "$MLIR_OPT" --pass-pipeline="$UP_PIPE" "up_$plan.mlir" -o "up_$plan.out.mlir" 2> "up_$plan.err"; then
    P=(); Q=(); S=()
    for round in 1 2 3; do
      t=$("$MLIR_OPT" --pass-pipeline="$UP_PIPE" --verify-each=0 "up_$plan.mlir" -o /dev/null \
          --mlir-timing --mlir-timing-display=list 2>&1)
      P+=($(echo "$t" | pass_time ShardingPropagation)); Q+=($(echo "$t" | pass_time Partition))
      S+=($(echo "$t" | pass_time Parser))
    done
    printf "%s\tupstream\t%s\t%s\t-\t%s\t%s\t-\t%s\n" "$plan" \
      "$(printf '%s\n' "${P[@]}" | med3)" "$(printf '%s\n' "${Q[@]}" | med3)" \
      "$(printf '%s\n' "${S[@]}" | med3)" \
      "$(grep -c -E "shard\.(all_|reduce_scatter|update_halo)" "up_$plan.out.mlir")" \
      "$(breakdown "up_$plan.out.mlir")" >> gpt.tsv
  else
    err=$(grep -m1 "error:" "up_$plan.err" | sed -E 's/^[^ ]* error: //')
    printf "%s\tupstream\tfails: %s\n" "$plan" "$err" >> gpt.tsv
  fi
done
echo
awk -F'\t' 'NR == 1 { next }
  $2 == "ours" {
    printf "%-3s ours      propagate %6.1f ms  partition %6.1f ms  optimise %6.1f ms  (parse %6.1f ms)  %4d collectives, %9d bytes/device  %s\n",
      $1, $3 * 1000, $4 * 1000, $5 * 1000, $6 * 1000, $7, $8, $9; next }
  $3 ~ /^fails/ { printf "%-3s upstream  %s\n", $1, $3; next }
  { printf "%-3s upstream  propagate %6.1f ms  partition %6.1f ms  (parse %6.1f ms)  %4d collectives  %s\n",
      $1, $3 * 1000, $4 * 1000, $6 * 1000, $7, $9 }' gpt.tsv
exit $fail
