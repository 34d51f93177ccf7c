#!/usr/bin/env bash
# Compile speed of two mesh-opt builds, A against B, on the passes alone.
#
#   bench/partition/ab.sh A_MESH_OPT B_MESH_OPT [OUTDIR]
#
# For each workload of bench/partition/gen.py (KINDS) and size (SIZES), runs
#   mesh-opt --verify-each=0 --mesh-propagate-sharding --mesh-partition
# with --mlir-timing, A and B alternating, ROUNDS times, and reports the median
# of propagation + partitioning for each, and B/A. Upstream's
# sharding-propagation + shard-partition (--verify-each=0) runs in the same
# rounds for reference, on ../shared/bench/upstream/gen.py's programs.
# Parse, printing and the verifier are excluded (MLIR's shared cost).
#   SIZES="5000 50000"  KINDS="ew ew1 mm kred"  ROUNDS=5  MLIR_OPT=...
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ $# -ge 2 ] || { sed -n 2,14p "$0"; exit 2; }
OUT=${3:-$(mktemp -d)}
mkdir -p "$OUT" && cp "$1" "$OUT/a.opt" && cp "$2" "$OUT/b.opt" || exit 1
A=$OUT/a.opt B=$OUT/b.opt
MLIR_OPT=${MLIR_OPT:-/usr/lib/llvm-22/bin/mlir-opt}
UPSTREAM=${UPSTREAM:-$(cd "$ROOT/../shared/bench/upstream" 2>/dev/null && pwd || echo /work/shared/bench/upstream)}
SIZES=${SIZES:-"5000 50000"}
KINDS=${KINDS:-"ew ew1 mm kred"}
ROUNDS=${ROUNDS:-5}
UP_PIPE='builtin.module(func.func(sharding-propagation,shard-partition))'

# Seconds spent in the two passes.
ours() {
  "$1" --verify-each=0 --mesh-propagate-sharding --mesh-partition "$2" \
    -o /dev/null --mlir-timing --mlir-timing-display=list 2>&1 |
    awk '$NF=="PropagateSharding"||$NF=="Partition"{s+=$1} END{printf "%.6f\n", s}'
}
upstream() {
  "$MLIR_OPT" --verify-each=0 --pass-pipeline="$UP_PIPE" "$1" -o /dev/null \
    --mlir-timing --mlir-timing-display=list 2>&1 |
    awk '$NF=="ShardingPropagation"||$NF=="Partition"{s+=$1} END{printf "%.6f\n", s}'
}
median() { sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A: $1 (md5 $(md5sum < "$A" | cut -c1-12))"
echo "B: $2 (md5 $(md5sum < "$B" | cut -c1-12))"
for n in $SIZES; do
  for k in $KINDS; do
    python3 "$HERE/gen.py" "$k" "$n" > "$OUT/$k-$n.mlir" || exit 1
    python3 "$UPSTREAM/gen.py" "$k" "$n" > "$OUT/up-$k-$n.mlir" || exit 1
    # Both builds must produce the same partitioned program.
    "$A" --mesh-propagate-sharding --mesh-partition "$OUT/$k-$n.mlir" -o "$OUT/a-$k-$n.out" &&
      "$B" --mesh-propagate-sharding --mesh-partition "$OUT/$k-$n.mlir" -o "$OUT/b-$k-$n.out" ||
      { echo "a run failed on $k $n"; exit 1; }
    cmp -s "$OUT/a-$k-$n.out" "$OUT/b-$k-$n.out" || echo "note: A and B partition $k $n differently"
  done
done
: > "$OUT/raw.tsv"
for round in $(seq "$ROUNDS"); do
  for n in $SIZES; do
    for k in $KINDS; do
      printf '%s\t%s\tA\t%s\n' "$k" "$n" "$(ours "$A" "$OUT/$k-$n.mlir")" >> "$OUT/raw.tsv"
      printf '%s\t%s\tB\t%s\n' "$k" "$n" "$(ours "$B" "$OUT/$k-$n.mlir")" >> "$OUT/raw.tsv"
      printf '%s\t%s\tU\t%s\n' "$k" "$n" "$(upstream "$OUT/up-$k-$n.mlir")" >> "$OUT/raw.tsv"
    done
  done
done
printf '| workload | ops | A (ms) | B (ms) | B / A | upstream (ms) |\n|---|---|---|---|---|---|\n'
for n in $SIZES; do
  for k in $KINDS; do
    a=$(awk -v k=$k -v n=$n '$1==k&&$2==n&&$3=="A"{print $4}' "$OUT/raw.tsv" | median)
    b=$(awk -v k=$k -v n=$n '$1==k&&$2==n&&$3=="B"{print $4}' "$OUT/raw.tsv" | median)
    u=$(awk -v k=$k -v n=$n '$1==k&&$2==n&&$3=="U"{print $4}' "$OUT/raw.tsv" | median)
    awk -v k=$k -v n=$n -v a=$a -v b=$b -v u=$u 'BEGIN{printf "| %s | %s | %.1f | %.1f | %.3f | %.1f |\n", k, n, a*1000, b*1000, b/a, u*1000}'
  done
done
echo "raw times: $OUT/raw.tsv"
