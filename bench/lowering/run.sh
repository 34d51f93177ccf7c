#!/usr/bin/env bash
# bench/lowering/run.sh: our lowering of collectives against upstream's, and
# against C calling the runtime directly (issue 4, "Benchmarks").
#
# What it builds, in a temp dir (KEEP=1 keeps it), from gen.py's one program:
# STEPS (1000) steps of "t = fma(x, 0.25, bias); x = all_reduce(t) over axis b"
# on ELEMS (256) f32 = 1 KiB, straight-line as partitioning emits it:
#   ours          build/bin/mesh-compile ours.mlir -o ours -lm
#   upstream      LLVM 22 mlir-opt: convert-shard-to-mpi, then the passes of our
#                 --mesh-to-llvm minus deallocation (it rejects the mpi ops);
#                 mlir-translate; clang, linked with Open MPI. Two Open MPI ABI
#                 bugs of upstream's MPI-to-LLVM conversion are patched in the
#                 .ll by fix_upstream_openmpi.py, or it cannot link or run.
#   upstream_cse  the same with -cse right after convert-shard-to-mpi (it merges
#                 the identical, Pure mpi.comm_split ops of straight-line code)
#   direct        C calling libmeshrt's C ABI, two static buffers
#   direct_fresh  the same C, but each all_reduce writes a fresh malloc'd
#                 buffer freed at the end, as the compiled code does
#   direct_reuse  the same, each buffer freed right after its last use
# Part 1 builds the first four on mesh (2, 4) and runs them on 8 ranks (on 2
# cores that is oversubscribed; OMPI_MCA_mpi_yield_when_idle=1), REPS1 (13)
# rounds. Part 2 builds ours and the three C programs on mesh (1, 2) and runs
# them on 2 ranks, one per core, where an all_reduce takes microseconds and
# per-call costs show, REPS (9) rounds. Part 3 is part 1 as a loop, for each
# N in LOOP_STEPS ("1000 10000"): one scf.for of N iterations carrying x, so
# that the program does not grow with N, REPS3 (9) rounds:
#   ours                mesh-compile (its one-shot bufferization allows
#                       returning allocations from loops)
#   upstream            as above, one-shot-bufferize also given
#                       allow-return-allocs-from-loops (it rejects the loop
#                       otherwise); the split stays in the loop
#   upstream_cse        with -cse after convert-shard-to-mpi (the split stays)
#   upstream_licm       with loop-invariant-code-motion after it instead: the
#                       Pure split is hoisted out of the loop
#   direct              the C above with N steps
# A round runs every program once with mpirun, the order rotated per round.
# Part 4 (only if PARTS names it) runs upstream's loop at CID_STEPS
# ("65531 65532") steps, and ours at the last: Open MPI 4.1 has 65,535
# communicator ids, and upstream never frees its splits.
# What it prints: the MPI calls of each lowered program (part 1: counted in
# its LLVM IR; part 3: made at run time, counted by mpi_count.c preloaded) and
# the runtime's split count (MESHRT_STATS=1); peak memory per rank; whether
# every run's per-rank checksums equal ours (exit 1 if not) and, on (2, 4),
# the closed form (gen.py expect); per part, a table of medians with min-max:
# end to end (wall time of mpirun) and per step (the timed chain of the
# slowest rank / steps), with ratios to ours.
# How long: about 5 minutes on 2 cores (parts 1 and 2: 3 minutes, most of it
# building the straight-line programs; part 3: 2 minutes; part 4, not run by
# default: 1.5 to 2 minutes and 4.5 GiB of memory).
# Usage: bench/lowering/run.sh   (env: PARTS ("1 2 3"), STEPS, ELEMS, REPS1,
#   REPS, LOOP_STEPS, REPS3, CID_STEPS, BUILD_DIR, KEEP)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
LLVM=${LLVM_BIN:-/usr/lib/llvm-22/bin}
STEPS=${STEPS:-1000} ELEMS=${ELEMS:-256} REPS=${REPS:-9} REPS1=${REPS1:-13}
PARTS=${PARTS:-1 2 3} LOOP_STEPS=${LOOP_STEPS:-1000 10000} REPS3=${REPS3:-9}
CID_STEPS=${CID_STEPS:-65531 65532}
part() { [[ " $PARTS " == *" $1 "* ]]; }
STRAIGHT_STEPS=$STEPS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1

WORK=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then echo "work dir: $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi
cd "$WORK"
for tool in "$BUILD/bin/mesh-compile" "$LLVM/mlir-opt" "$LLVM/mlir-translate" "$LLVM/clang-22"; do
  [ -x "$tool" ] || { echo "run.sh: missing $tool" >&2; exit 2; }
done
for tool in mpirun mpicc bc /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "run.sh: needs $tool" >&2; exit 2; }
done

now() { date +%s.%N; }
timed() {  # timed LABEL CMD...: runs CMD, says how long it took
  local t0; t0=$(now); "${@:2}"
  printf "  built %-20s in %5.1f s\n" "$1" "$(echo "$(now) - $t0" | bc -l)"
}
gen() { python3 "$HERE/gen.py" "$@"; }
build_ours() {  # build_ours NAME SHAPE [KIND]: the documented command
  gen "${3:-ours}" "$STEPS" "$ELEMS" "$2" > "$1.mlir"
  # -lm: the fma lowers to a call to fmaf (baseline x86-64 has no FMA
  # instruction), and mesh-compile does not link libm.
  "$BUILD/bin/mesh-compile" "$1.mlir" -o "$1" -lm --keep
}
build_c() {  # build_c NAME KIND SHAPE
  gen "$2" "$STEPS" "$ELEMS" "$3" > "$1.c"
  "$LLVM/clang-22" -O2 "$1.c" -o "$1" -I"$ROOT/runtime/include" \
    -L"$BUILD/lib" -lmeshrt -Wl,-rpath,"$BUILD/lib" -lm
}
# Upstream: our pass list with convert-shard-to-mpi in place of our conversion.
# No buffer-deallocation-pipeline: it fails on mpi.allreduce ("ops with unknown
# memory side effects are not supported"), so upstream's temporaries leak.
# UP_LOOP: the loop form needs allow-return-allocs-from-loops, as ours does.
UP_BUF='one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map'
UP_LOOP=
up_tail() {
  echo "func.func(convert-elementwise-to-linalg,linalg-fuse-elementwise-ops),canonicalize,$UP_BUF$UP_LOOP},func.func(convert-linalg-to-loops),convert-bufferization-to-memref,canonicalize,expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts"
}
build_upstream() {  # build_upstream NAME PASSES-BEFORE-THE-TAIL [KIND]
  [ -f upstream.mlir ] || gen "${3:-upstream}" "$STEPS" "$ELEMS" 2x4 > upstream.mlir
  "$LLVM/mlir-opt" upstream.mlir --pass-pipeline="builtin.module($2,$(up_tail))" -o "$1.llvm.mlir"
  # The shard.grid symbol survives the lowering, and mlir-translate rejects it.
  grep -v '^ *shard\.grid ' "$1.llvm.mlir" > "$1.nogrid.mlir"
  "$LLVM/mlir-translate" --mlir-to-llvmir "$1.nogrid.mlir" -o "$1.raw.ll"
  python3 "$HERE/fix_upstream_openmpi.py" "$1.raw.ll" "$1.ll" | sed 's/^/  /'
  # shellcheck disable=SC2046
  "$LLVM/clang-22" -O2 -Wno-override-module "$1.ll" -o "$1" $(mpicc --showme:link) -lm
}

# bench NPROC PROGS...: REPS rounds; appends "prog round e2e_s chain_ns" to
# results.tsv and keeps each run's "rank R checksum C sum S" lines.
bench() {
  local np=$1; shift
  local progs=("$@") r k p t0 t1
  for ((r = 0; r < REPS; r++)); do
    for ((k = 0; k < ${#progs[@]}; k++)); do
      p=${progs[$(((k + r) % ${#progs[@]}))]}
      t0=$(now)
      mpirun -n "$np" "./$p" > "$p.$r.out"
      t1=$(now)
      sort -n -k2 "$p.$r.out" | awk '{print $1, $2, $3, $4, $5, $6}' > "$p.$r.sums"
      printf "%s\t%s\t%s\t%s\n" "$p" "$r" "$(echo "$t1 - $t0" | bc -l)" \
        "$(awk '{if ($8 > m) m = $8} END {print m}' "$p.$r.out")" >> results.tsv
    done
  done
}
same_sums() {  # same_sums NPROC REF PROGS...: every run of PROGS prints REF's sums
  local np=$1 ref=$2.0.sums ok=1 n=0 p f; shift 2
  [ "$(wc -l < "$ref")" = "$np" ] || { echo "  $ref does not have $np ranks"; ok=0; }
  if [ "$np" = 8 ]; then  # mesh (2, 4): the closed form too
    if gen expect "$STEPS" "$ELEMS" 2x4 | cmp -s - "$ref"; then
      echo "  $ref matches the closed form x_j = j + $STEPS (40a + 10) (gen.py expect)"
    else echo "  MISMATCH: $ref differs from the closed form (gen.py expect)"; ok=0; fi
  fi
  for p in "$@"; do
    for f in "$p".*.sums; do
      n=$((n + 1))
      cmp -s "$f" "$ref" || { echo "  MISMATCH: $f differs from $ref"; ok=0; }
    done
  done
  [ $ok = 1 ] && echo "  yes: all $n runs print the same per-rank checksum and sum:" \
    && sed 's/^/    /' "$ref"
  [ $ok = 1 ]
}
# timed_run NPROC PROG: mpirun, each rank under /usr/bin/time writing its peak
# memory (KiB) to its own file, PROG.rss.RANK (through mpirun's shared stderr
# the ranks' lines can interleave).
timed_run() {
  rm -f "$2".rss.*
  # shellcheck disable=SC2016
  mpirun -n "$1" sh -c '/usr/bin/time -f %M -o "$0.rss.$OMPI_COMM_WORLD_RANK" "./$0"' "$2"
}
max_rss() { cat "$1".rss.* | awk '$1 + 0 > m {m = $1 + 0} END {print m + 0}'; }
peak_rss() {  # peak_rss NPROC PROGS...: one run each, the largest of the ranks
  local np=$1 p; shift
  for p in "$@"; do
    timed_run "$np" "$p" > /dev/null 2>&1 || true
    printf "  %-18s %7d KiB\n" "$p" "$(max_rss "$p")"
  done
}
mpi_calls() {  # mpi_calls NPROC PROGS...: MPI calls made, the most of any rank
  local np=$1 p; shift
  [ -f mpi_count.so ] || mpicc -O2 -shared -fPIC "$HERE/mpi_count.c" -o mpi_count.so
  for p in "$@"; do
    mpirun -x LD_PRELOAD="$PWD/mpi_count.so" -n "$np" "./$p" 2>&1 >/dev/null \
      | awk -v p="$p" '$1 == "mpi_count" {for (i = 4; i < NF; i += 2) if ($(i+1) > m[$i]) m[$i] = $(i+1)}
          END {printf "  %-18s MPI_Comm_split %d, MPI_Comm_dup %d, MPI_Comm_free %d, MPI_Comm_rank %d, MPI_Allreduce %d\n",
               p, m["Comm_split"], m["Comm_dup"], m["Comm_free"], m["Comm_rank"], m["Allreduce"]}'
  done
}
table() {  # table PROGS...: medians of results.tsv, ratios to the first
  python3 - "$STEPS" "$@" <<'EOF'
import statistics, sys
steps, progs = int(sys.argv[1]), sys.argv[2:]
runs = {}
for line in open("results.tsv"):
    p, _, e2e, chain = line.split()
    runs.setdefault(p, []).append((float(e2e), int(chain) / 1e3 / steps))
med = statistics.median
def col(p, i): return [r[i] for r in runs[p]]
ref_e, ref_s = med(col(progs[0], 0)), med(col(progs[0], 1))
rows = [["program", "end to end (s)", "per step (us)", f"e2e / {progs[0]}", f"step / {progs[0]}"]]
for p in progs:
    e, s = col(p, 0), col(p, 1)
    rows.append([p, f"{med(e):.2f} ({min(e):.2f}-{max(e):.2f})",
                 f"{med(s):.1f} ({min(s):.1f}-{max(s):.1f})",
                 f"{med(e) / ref_e:.2f}", f"{med(s) / ref_s:.2f}"])
w = [max(len(r[i]) for r in rows) for i in range(5)]
for k, r in enumerate(rows):
    print("| " + " | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)) + " |")
    if k == 0:
        print("|" + "|".join("-" * (x + 2) for x in w) + "|")
EOF
}

echo "== $(git -C "$ROOT" log -1 --format='commit %h (%cd)' --date=short 2>/dev/null || echo 'no git');" \
  "mesh-opt $(date -r "$BUILD/bin/mesh-opt" '+%F %T'), libmeshrt $(date -r "$BUILD/lib/libmeshrt.so" '+%F %T')"
echo "== load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine adds noise)"
# CPU time of the whole machine (/proc/stat) and of this script (times), to
# tell at the end how much other work ran meanwhile.
busy_s() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / {print ($2 + $3 + $4 + $7 + $8) / hz}' /proc/stat; }
BUSY0=$(busy_s) START=$(now)
ok=1
if part 1; then
echo "== part 1: mesh (2, 4), 8 ranks on $(nproc) cores; $STEPS all_reduces of $((ELEMS * 4)) B over axis b"
timed ours build_ours ours 2x4
timed upstream build_upstream upstream convert-shard-to-mpi
timed upstream_cse build_upstream upstream_cse convert-shard-to-mpi,cse
timed direct build_c direct direct 2x4

echo "== MPI and runtime calls in the lowered programs (counted in the LLVM IR)"
count() { grep -c "$1" "$2" || true; }
printf "  %-13s %s\n" ours "MPI_Comm_split: 0, meshrt_comm_get: $(count 'call i32 @meshrt_comm_get(' ours.ll) (in mesh_module_init), meshrt_all_reduce: $(count 'call i32 @meshrt_all_reduce(' ours.ll)"
for p in upstream upstream_cse; do
  printf "  %-13s %s\n" "$p" "MPI_Comm_split: $(count 'call i32 @MPI_Comm_split(' $p.ll), MPI_Comm_free: $(count '@MPI_Comm_free' $p.ll), MPI_Comm_rank: $(count 'call i32 @MPI_Comm_rank(' $p.ll), MPI_Allreduce: $(count 'call i32 @MPI_Allreduce(' $p.ll)"
done
echo "  upstream, steps 1 and 2 of the chain after convert-shard-to-mpi (one split per all_reduce):"
"$LLVM/mlir-opt" upstream.mlir --convert-shard-to-mpi \
  | grep -E 'mpi\.(comm_split|allreduce)' | sed -n '3,6p' | sed 's/^ */    /'
echo "  ours, the runtime's counters (MESHRT_STATS=1):"
MESHRT_STATS=1 mpirun -n 8 ./ours 2>&1 >/dev/null | awk '/stats/ && !n++ {print "    " $0}'

echo "== peak resident memory per rank (one run each, the largest of the 8 ranks)"
P1=(ours upstream upstream_cse direct)
peak_rss 8 "${P1[@]}"

echo "== running part 1: $REPS1 rounds"
: > results.tsv
REPS=$REPS1 bench 8 "${P1[@]}"
echo "== results identical?"
same_sums 8 ours "${P1[@]}" || ok=0
echo "== part 1: medians over $REPS1 rounds (min-max)"
table "${P1[@]}"
fi

if part 2; then
echo "== part 2: mesh (1, 2), 2 ranks, one per core: the cost per call"
timed ours12 build_ours ours12 1x2
timed direct12 build_c direct12 direct 1x2
timed direct_fresh12 build_c direct_fresh12 direct-fresh 1x2
timed direct_reuse12 build_c direct_reuse12 direct-reuse 1x2
P2=(ours12 direct12 direct_fresh12 direct_reuse12)
: > results.tsv
bench 2 "${P2[@]}"
same_sums 2 ours12 "${P2[@]}" || ok=0
echo "== part 2: medians over $REPS rounds (min-max)"
table "${P2[@]}"
fi

# Part 3, for one step count N, in the directory loopN.
loop_part() {
  local n=$1 P3=(ours upstream upstream_cse upstream_licm direct)
  mkdir "loop$n" && cd "loop$n"
  echo "== part 3: the loop form, mesh (2, 4), 8 ranks; scf.for of $n all_reduces of $((ELEMS * 4)) B"
  timed ours build_ours ours 2x4 ours-loop
  UP_LOOP=' allow-return-allocs-from-loops'
  timed upstream build_upstream upstream convert-shard-to-mpi upstream-loop
  timed upstream_cse build_upstream upstream_cse convert-shard-to-mpi,cse
  timed upstream_licm build_upstream upstream_licm convert-shard-to-mpi,loop-invariant-code-motion
  UP_LOOP=
  timed direct build_c direct direct 2x4
  echo "  upstream's pipeline: --pass-pipeline='builtin.module(convert-shard-to-mpi[,cse | ,loop-invariant-code-motion],$(UP_LOOP=' allow-return-allocs-from-loops' up_tail))'"
  echo "  ops in the loop body after upstream's conversion (and cse / licm):"
  local p pre
  for p in upstream:convert-shard-to-mpi upstream_cse:convert-shard-to-mpi,cse \
           upstream_licm:convert-shard-to-mpi,loop-invariant-code-motion; do
    pre=${p#*:}
    printf "    %-14s %s\n" "${p%%:*}" "$("$LLVM/mlir-opt" upstream.mlir --pass-pipeline="builtin.module($pre)" \
      | awk '/scf.for .*tensor<'"$ELEMS"'xf32>/ {f = 1; next} f && /scf.yield/ {exit}
             f {sub(/^ *(%[^=]*= )?/, ""); sub(/[ ({].*/, ""); printf "%s ", $0}')"
  done
  echo "== part 3 ($n): MPI calls made at run time (mpi_count.c, the most of any rank)"
  mpi_calls 8 "${P3[@]}"
  echo "== part 3 ($n): peak resident memory per rank (the largest of the 8)"
  peak_rss 8 "${P3[@]}"
  echo "== running part 3 ($n): $REPS3 rounds"
  : > results.tsv
  REPS=$REPS3 bench 8 "${P3[@]}"
  same_sums 8 ours "${P3[@]}" || ok=0
  if [ -f ../ours.0.sums ] && [ "$n" = "$STRAIGHT_STEPS" ]; then
    if cmp -s ours.0.sums ../ours.0.sums; then echo "  the same as part 1's straight-line programs"
    else echo "  MISMATCH: loop and straight-line ours differ"; ok=0; fi
  fi
  echo "== part 3 ($n): medians over $REPS3 rounds (min-max)"
  table "${P3[@]}"
  cd ..
}
if part 3; then
  for n in $LOOP_STEPS; do STEPS=$n loop_part "$n"; done
fi

# Part 4: how many all_reduces upstream's loop survives.
if part 4; then
  echo "== part 4: upstream's loop at $CID_STEPS steps (one leaked communicator per step), ours at the last"
  mkdir cid && cd cid
  P4=()
  for n in $CID_STEPS; do
    rm -f upstream.mlir
    UP_LOOP=' allow-return-allocs-from-loops' STEPS=$n timed "upstream$n" build_upstream "upstream$n" convert-shard-to-mpi upstream-loop
    P4+=("upstream$n")
  done
  STEPS=$n timed "ours$n" build_ours "ours$n" 2x4 ours-loop
  for p in "${P4[@]}" "ours$n"; do
    n=${p//[a-z]/} rc=0 t0=$(now)
    timed_run 8 "$p" > "$p.out" 2> "$p.err" || rc=$?
    sort -n -k2 "$p.out" | awk '{print $1, $2, $3, $4, $5, $6}' > "$p.sums"
    printf "  %-15s exit %d after %5.1f s, peak %d KiB per rank, %s\n" "$p" "$rc" \
      "$(echo "$(now) - $t0" | bc -l)" \
      "$(max_rss "$p")" \
      "$(if STEPS=$n gen expect "$n" "$ELEMS" 2x4 | cmp -s - "$p.sums"; then echo "all 8 ranks print the closed form";
         else echo "$(wc -l < "$p.sums") of 8 ranks printed"; fi)"
    grep -m3 -E '\*\*\* (An error|MPI_ERR)' "$p.err" | sed 's/^/    /' || true
  done
  cd ..
fi
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
times > times.txt  # in this shell: a $(times) would report the subshell's
mine=$(awk '{for (i = 1; i <= NF; i++) {split($i, a, /[ms]/); s += a[1] * 60 + a[2]}} END {print s}' times.txt)
echo "$(busy_s) $BUSY0 $mine $(now) $START" | awk '{all = $1 - $2; wall = $4 - $5;
  printf "== CPU time during the run (%.0f s): %.0f s in all, %.0f s of it this script'"'"'s;" \
    " other work: %.0f s (%.2f cores on average)\n", wall, all, $3, all - $3, (all - $3) / wall}'
[ $ok = 1 ]
