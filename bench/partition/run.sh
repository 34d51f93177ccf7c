#!/usr/bin/env bash
# Sharding propagation + partitioning: ours beside upstream, in one run.
#
#   ours:     build/bin/mesh-opt --mesh-propagate-sharding --mesh-partition
#             on bench/partition/gen.py KIND N            (our `mesh` dialect)
#   upstream: /usr/lib/llvm-22/bin/mlir-opt
#             --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))'
#             on ../shared/bench/upstream/gen.py KIND N   (LLVM 22 `shard` dialect)
#
# The two generators write the same programs op for op (see gen.py's header).
# Timing follows ../shared/bench/upstream/bench.sh exactly: per-pass wall times
# from --mlir-timing --mlir-timing-display=list, median of 3 runs, parse, output
# and process start-up excluded (each pass's time includes the verifier run after
# it, for both compilers). The 3 runs are 3 rounds over every size and kind, ours
# then upstream each time, so a change in the machine's load hits all sizes and
# both compilers alike; mesh-opt is copied first, so a relink does not matter. ops/s = payload ops / (propagation + partition seconds);
# payload ops are the elementwise ops + linalg.matmul/fill + tensor.empty
# (upstream: its bench.sh's count from --print-op-stats; ours: the same ops
# counted in the generated text, one op per line; the script checks they match).
# Collectives are counted in each partitioned output as bench.sh does (every
# all_* op, reduce_scatter, update_halo; all_slice included, though it does not
# communicate); the breakdown by op is in results.tsv. Our output is re-parsed
# (verified) by mesh-opt.
#
# Usage: bench/partition/run.sh [OUTDIR]     (default: a new temp dir)
#   SIZES="1000 5000 10000 20000 50000"  KINDS="ew ew1 mm kred"  STYLE=op|attr
#   MESH_OPT=build/bin/mesh-opt  MLIR_OPT=/usr/lib/llvm-22/bin/mlir-opt
#   UPSTREAM=/work/shared/bench/upstream
# Writes OUTDIR/results.tsv (medians, one row per kind, size and compiler, plus
# the fastest run), raw.tsv (every run), outputs.tsv, table.md, and the 5,000-op
# partitioned outputs; prints a table with ours/upstream speed-up and, per
# compiler, time(largest size)/time(5000).
# About 3 to 4 minutes on 2 shared cores with the default sizes; exits 1 if a run fails.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MESH_OPT=${MESH_OPT:-$ROOT/build/bin/mesh-opt}
MLIR_OPT=${MLIR_OPT:-/usr/lib/llvm-22/bin/mlir-opt}
UPSTREAM=${UPSTREAM:-$(cd "$ROOT/../shared/bench/upstream" 2>/dev/null && pwd || echo /work/shared/bench/upstream)}
SIZES=${SIZES:-"1000 5000 10000 20000 50000"}
KINDS=${KINDS:-"ew ew1 mm kred"}
STYLE=${STYLE:-op}
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT" && cd "$OUT" || exit 1
command -v bc >/dev/null || { echo "bc is needed (apt-get install -y bc)"; exit 1; }
for t in "$MESH_OPT" "$MLIR_OPT" "$UPSTREAM/gen.py"; do
  [ -e "$t" ] || { echo "missing: $t"; exit 1; }
done

# Time a private copy: the build may be relinked while this runs.
echo "mesh-opt: $MESH_OPT ($(date -u -r "$MESH_OPT" '+%F %T UTC'), md5 $(md5sum < "$MESH_OPT" | cut -c1-12))"
cp "$MESH_OPT" ./mesh-opt.timed && MESH_OPT=$PWD/mesh-opt.timed
UP_PIPE='builtin.module(func.func(sharding-propagation,shard-partition))'
med3() { sort -g | sed -n 2p; }
up_payload() {  # exactly bench.sh's payload_ops
  "$MLIR_OPT" --print-op-stats "$1" -o /dev/null 2>&1 | awk -F',' '/,/{n=$1; gsub(/ /,"",n); c=$2+0;
     if (n ~ /^(tosa\.|linalg\.(matmul|fill)$|tensor\.empty$)/) s+=c} END{print s+0}'
}
our_payload() {
  grep -c -E '= (arith\.(addf|subf|mulf)|math\.(tanh|exp)|linalg\.(matmul|fill)|tensor\.empty)[ (]' "$1"
}
up_coll() { grep -c -E "shard\.(all_|reduce_scatter|update_halo)" "$1"; }
our_coll() { grep -c -E "mesh\.(all_|reduce_scatter|update_halo)" "$1"; }
breakdown() {  # "all_reduce:8,all_slice:3"
  grep -o -E "(mesh|shard)\.(all_[a-z_]+|reduce_scatter|update_halo)" "$1" | sed 's/^[a-z]*\.//' |
    sort | uniq -c | awk '{printf "%s%s:%s", (NR>1?",":""), $2, $1} END{if (NR==0) printf "-"}'
}
# Times one compiler on one file: sets P Q R (medians of prop, part, parse).
time3() {  # tool file
  local i out
  if [ "$1" = ours ]; then
    out=$("$MESH_OPT" --mesh-propagate-sharding --mesh-partition "$2" -o /dev/null \
          --mlir-timing --mlir-timing-display=list 2>&1) || return 1
    TP+=($(echo "$out" | awk '$NF=="PropagateSharding"{print $1}'))
  else
    out=$("$MLIR_OPT" --pass-pipeline="$UP_PIPE" "$2" -o /dev/null \
          --mlir-timing --mlir-timing-display=list 2>&1) || return 1
    TP+=($(echo "$out" | awk '$NF=="ShardingPropagation"{print $1}'))
  fi
  TQ+=($(echo "$out" | awk '$NF=="Partition"{print $1}'))
  TR+=($(echo "$out" | awk '$NF=="Parser"{print $1}'))
}

fail=0
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); style=$STYLE; out: $OUT"
# 1. Inputs, payload counts, partitioned outputs, collectives, verification.
printf "kind\tN\tcompiler\tpayload_ops\tout_collectives\tbreakdown\n" > outputs.tsv
for n in $SIZES; do
  for k in $KINDS; do
    fo=ours_${k}_${n}.mlir; fu=up_${k}_${n}.mlir
    [ -f "$fo" ] || python3 "$HERE/gen.py" --style="$STYLE" "$k" "$n" > "$fo"
    [ -f "$fu" ] || python3 "$UPSTREAM/gen.py" "$k" "$n" > "$fu"
    opsO=$(our_payload "$fo"); opsU=$(up_payload "$fu")
    [ "$opsO" = "$opsU" ] || { echo "payload ops differ for $k $n: ours $opsO upstream $opsU"; fail=1; }
    "$MESH_OPT" --mesh-propagate-sharding --mesh-partition "$fo" -o ours_out.mlir 2>ours_err.txt ||
      { echo "ours failed on $fo"; fail=1; }
    "$MESH_OPT" ours_out.mlir -o /dev/null || { echo "our output for $k $n does not verify"; fail=1; }
    "$MLIR_OPT" --pass-pipeline="$UP_PIPE" "$fu" -o up_out.mlir 2>/dev/null ||
      { echo "upstream failed on $fu"; fail=1; }
    [ "$n" = 5000 ] && cp ours_out.mlir "ours_${k}_5000.out.mlir" && cp up_out.mlir "up_${k}_5000.out.mlir"
    printf "%s\t%s\tours\t%s\t%s\t%s\n" "$k" "$n" "$opsO" "$(our_coll ours_out.mlir)" "$(breakdown ours_out.mlir)" >> outputs.tsv
    printf "%s\t%s\tupstream\t%s\t%s\t%s\n" "$k" "$n" "$opsU" "$(up_coll up_out.mlir)" "$(breakdown up_out.mlir)" >> outputs.tsv
  done
done
# 2. Timing: 3 rounds, each over every size and kind, ours then upstream, so
# that a change in the machine's load spreads over all sizes and both compilers.
printf "round\tkind\tN\tcompiler\tprop_s\tpart_s\tparse_s\n" > raw.tsv
for round in 1 2 3; do
  for n in $SIZES; do
    for k in $KINDS; do
      for tool in ours up; do
        TP=(); TQ=(); TR=()
        if [ $tool = ours ]; then f=ours_${k}_${n}.mlir; name=ours; else f=up_${k}_${n}.mlir; name=upstream; fi
        time3 $tool "$f" || { echo "$name failed on $f"; fail=1; continue; }
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" $round "$k" "$n" $name "${TP[0]}" "${TQ[0]}" "${TR[0]}" >> raw.tsv
      done
    done
  done
  echo "  round $round done (load $(cut -d' ' -f1 /proc/loadavg))"
done
# 3. Medians (each column on its own, as bench.sh) and ops/s.
printf "kind\tN\tcompiler\tpayload_ops\tprop_s\tpart_s\tparse_s\tprop+part_ops_per_s\tout_collectives\tbreakdown\tmin_prop+part_s\n" > results.tsv
for n in $SIZES; do
  for k in $KINDS; do
    for name in ours upstream; do
      sel() { awk -F'\t' -v k="$k" -v n="$n" -v c="$name" -v col="$1" '$2==k && $3==n && $4==c {print $col}' raw.tsv; }
      p=$(sel 5 | med3); q=$(sel 6 | med3); r=$(sel 7 | med3)
      mn=$(awk -F'\t' -v k="$k" -v n="$n" -v c="$name" '$2==k && $3==n && $4==c {t=$5+$6; if (m=="" || t<m) m=t} END{printf "%.4f", m}' raw.tsv)
      read -r ops coll bd < <(awk -F'\t' -v k="$k" -v n="$n" -v c="$name" '$1==k && $2==n && $3==c {print $4, $5, $6}' outputs.tsv)
      [ -n "$p" ] && [ -n "$q" ] || continue
      rate=$(echo "$ops / ($p + $q)" | bc -l | xargs printf "%.0f")
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$k" "$n" "$name" "$ops" "$p" "$q" "$r" "$rate" "$coll" "$bd" "$mn" >> results.tsv
    done
  done
done

# The table: per kind and size, both compilers, speed-up, and linearity.
echo
awk -F'\t' -v sizes="$SIZES" '
NR == 1 { next }
{ t[$1, $2, $3] = $5 + $6; r[$1, $2, $3] = $8; c[$1, $2, $3] = $9; if (!($1 in seen)) { seen[$1] = 1; kinds[++nk] = $1 } }
END {
  ns = split(sizes, S, " "); big = S[ns]
  printf "| workload | ops | ours prop+part (s) | upstream prop+part (s) | ours ops/s | upstream ops/s | ours / upstream speed | collectives ours / upstream |\n"
  printf "|---|---:|---:|---:|---:|---:|---:|---:|\n"
  for (i = 1; i <= nk; i++) for (j = 1; j <= ns; j++) {
    k = kinds[i]; n = S[j]
    if (!((k, n, "ours") in t)) continue
    printf "| %s | %d | %.4f | %.4f | %d | %d | %.2fx | %s / %s |\n", k, n, t[k, n, "ours"], t[k, n, "upstream"],
      r[k, n, "ours"], r[k, n, "upstream"], t[k, n, "upstream"] / t[k, n, "ours"], c[k, n, "ours"], c[k, n, "upstream"]
  }
  if ((kinds[1], 5000, "ours") in t && big != 5000) {
    printf "\n| workload | ours t(%d)/t(5000) | upstream t(%d)/t(5000) | (linear = %.0f; target <= 12 for ours) |\n", big, big, big / 5000
    printf "|---|---:|---:|---|\n"
    for (i = 1; i <= nk; i++) { k = kinds[i]
      printf "| %s | %.1f | %.1f | |\n", k, t[k, big, "ours"] / t[k, 5000, "ours"], t[k, big, "upstream"] / t[k, 5000, "upstream"] }
  }
}' results.tsv | tee table.md
echo "results: $OUT/results.tsv, $OUT/table.md"
exit $fail
