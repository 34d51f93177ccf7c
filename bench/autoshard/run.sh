#!/usr/bin/env bash
# mesh-auto-shard against the hand plans, and its solve time.
#
# 1. Plans. For each program, with only the batch annotated:
#    - each hand plan (annotations on the arguments, propagation for the
#      rest): its memory per device and cost in the auto-sharder's model
#      (mesh-propagate-sharding, then mesh-auto-shard=explain, which prices
#      a fully annotated program as it stands), and the bytes per device
#      mesh-report-communication counts after partitioning and
#      mesh-optimize-collectives;
#    - mesh-auto-shard with no budget and with each hand plan's memory as
#      the budget: its memory, whether it is proven optimal, and the same
#      bytes. Where a hand plan fits a budget, the auto plan must not move
#      more bytes than the best hand plan that fits (a line says so).
#    Programs: the 48-layer GPT stack of bench/partition/gpt.py on
#    (dp 2, tp 4) against DP, Megatron TP, TP + SP, FSDP (every parameter
#    split over both axes) and HSDP (over "tp"), and 8-layer MLP training
#    steps of mlp_step.py on (8) and on (2, 4).
# 2. Solve time: the pass alone (--mlir-timing, --verify-each=0) on the
#    48-layer GPT stack on (2, 4), (8, 8) and (2, 2, 2), ROUNDS runs each
#    (median, min, max).
#
# AUTO_OPTS adds options to every mesh-auto-shard run (the rates: with
# AUTO_OPTS="axis-cost=*=0us:1GB/s flops=1e18" the model's cost is the
# bytes alone, the measure the hand plans are compared by).
#
# Usage: bench/autoshard/run.sh [build dir]   (ROUNDS=5, LAYERS=48, AUTO_OPTS)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
MESH_OPT=$BUILD/bin/mesh-opt
ROUNDS=${ROUNDS:-5}
LAYERS=${LAYERS:-48}
PY=${PYTHON:-python3}
AUTO_OPTS=${AUTO_OPTS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# bytes FILE PASSES...: bytes per device of the partitioned, optimised
# program (a hand plan: propagation first; an auto plan: as the pass wrote
# it, every value annotated).
bytes() {
  local f=$1; shift
  "$MESH_OPT" "$f" "$@" --mesh-partition \
      --mesh-optimize-collectives --mesh-report-communication -o /dev/null 2>&1 |
    sed -n 's/.*total: [0-9]* collectives\?, \([0-9]*\) bytes per device.*/\1/p' | head -1
}
# model FILE OPTS...: "memory-bytes cost-line" of a plan in the model.
summary() {
  "$MESH_OPT" "$1" "${@:2}" -o /dev/null 2>&1 | grep -m1 "^auto-shard @.* on @" || true
}
# memory_of FILE OPTS...: the plan's peak memory per device, in bytes.
memory_of() {
  "$MESH_OPT" "$1" "${@:2}" -o /dev/null 2>&1 |
    sed -n 's/^  peak memory: .* per device (\([0-9]*\) bytes;.*/\1/p' | head -1
}

compare() { # NAME AUTOFILE HANDPLAN=FILE...
  local name=$1 auto=$2; shift 2
  echo "== $name"
  printf "%-22s %14s %16s  %s\n" plan "memory/device" "bytes/device" "model"
  local budgets=() hands=()
  for hp in "$@"; do
    local plan=${hp%%=*} f=${hp#*=}
    local mem b
    mem=$(memory_of "$f" --mesh-propagate-sharding "--mesh-auto-shard=explain $AUTO_OPTS")
    b=$(bytes "$f" --mesh-propagate-sharding)
    printf "%-22s %14s %16s  %s\n" "hand $plan" "$mem" "$b" \
      "$(summary "$f" --mesh-propagate-sharding "--mesh-auto-shard=explain $AUTO_OPTS" | sed 's/^auto-shard @[a-z0-9_]* on @m ([^)]*): //; s/, proven optimal//')"
    budgets+=("$mem")
    hands+=("$plan:$mem:$b")
  done
  for budget in none "${budgets[@]}"; do
    local opt="--mesh-auto-shard=explain $AUTO_OPTS" label="auto, no budget"
    if [ "$budget" != none ]; then
      opt="--mesh-auto-shard=explain memory-per-device=$budget $AUTO_OPTS"
      label="auto, budget $budget"
    fi
    local line mem b
    line=$(summary "$auto" "$opt")
    mem=$(memory_of "$auto" "$opt")
    b=$(bytes "$auto" "$opt")
    printf "%-22s %14s %16s  %s\n" "$label" "$mem" "$b" \
      "$(echo "$line" | sed 's/^auto-shard @[a-z0-9_]* on @m ([^)]*): //')"
    # The best hand plan that fits this budget, by bytes.
    local best="" bestb=""
    for h in "${hands[@]}"; do
      IFS=: read -r hp hm hb <<<"$h"
      if [ "$budget" = none ] || [ "$hm" -le "$budget" ]; then
        if [ -z "$bestb" ] || [ "$hb" -lt "$bestb" ]; then best=$hp; bestb=$hb; fi
      fi
    done
    if [ -n "$bestb" ] && [ -n "$b" ]; then
      if [ "$b" -le "$bestb" ]; then verdict="<="; else verdict="MORE THAN"; fi
      echo "    auto moves $b bytes: $verdict the best hand plan that fits ($best, $bestb)"
    fi
  done
}

# 1. Plans.
"$PY" "$ROOT/bench/partition/gpt.py" --plan batch --layers "$LAYERS" > "$tmp/gpt_auto.mlir"
hands=()
for p in dp tp sp fsdp hsdp; do
  "$PY" "$ROOT/bench/partition/gpt.py" --plan $p --layers "$LAYERS" > "$tmp/gpt_$p.mlir"
  hands+=("$p=$tmp/gpt_$p.mlir")
done
compare "GPT stack, $LAYERS layers, (dp 2, tp 4)" "$tmp/gpt_auto.mlir" "${hands[@]}"

for mesh in d=8 dp=2,tp=4; do
  "$PY" "$ROOT/bench/autoshard/mlp_step.py" --plan auto --layers 8 --mesh $mesh > "$tmp/mlp_auto.mlir"
  hands=()
  plans="ddp fsdp"
  [ "$mesh" = dp=2,tp=4 ] && plans="ddp fsdp hsdp tp"
  for p in $plans; do
    "$PY" "$ROOT/bench/autoshard/mlp_step.py" --plan $p --layers 8 --mesh $mesh > "$tmp/mlp_$p.mlir"
    hands+=("$p=$tmp/mlp_$p.mlir")
  done
  compare "MLP training step, 8 layers, ($mesh)" "$tmp/mlp_auto.mlir" "${hands[@]}"
done

# 2. Solve time.
echo "== solve time, the pass alone, $LAYERS-layer GPT stack ($ROUNDS runs)"
for mesh in '"dp" = 2, "tp" = 4' '"dp" = 8, "tp" = 8' '"dp" = 2, "tp" = 2, "x" = 2'; do
  sed "s/mesh.mesh @m(\[\"dp\" = 2, \"tp\" = 4\])/mesh.mesh @m([$mesh])/" \
    "$tmp/gpt_auto.mlir" > "$tmp/solve.mlir"
  times=()
  for _ in $(seq "$ROUNDS"); do
    times+=("$("$MESH_OPT" "$tmp/solve.mlir" --mesh-auto-shard --verify-each=0 \
      --mlir-timing -o /dev/null 2>&1 | awk '/AutoShard/ { print $1 }')")
  done
  printf "%-32s median %s s (min %s, max %s)\n" "($mesh)" \
    "$(printf '%s\n' "${times[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')" \
    "$(printf '%s\n' "${times[@]}" | sort -g | head -1)" \
    "$(printf '%s\n' "${times[@]}" | sort -g | tail -1)"
done
