#!/usr/bin/env bash
# Fuzzes mesh-opt's parse + verify + canonicalize (the mesh-fuzz libFuzzer
# target) for a bounded time, seeded with every lit test split at `// -----`.
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR]    default 20 s and ./build
# The test command runs it for 20 s with a fixed seed (FUZZ_SEED, default 1);
# run it for an hour with another seed with
#   FUZZ_SEED=$RANDOM scripts/fuzz.sh 3600
# A crash is written to $BUILD_DIR/fuzz-artifacts/ and the script exits 1:
# minimise it (mesh-fuzz -minimize_crash=1 FILE), fix the bug, and add the
# input under test/Fuzz/regressions/ so it stays fixed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_TO_RUN=${1:-20}
BUILD_DIR=${2:-$ROOT/build}
FUZZ=$BUILD_DIR/bin/mesh-fuzz
[ -x "$FUZZ" ] || { echo "fuzz: $FUZZ not built (needs clang with libFuzzer)"; exit 2; }

CORPUS=$BUILD_DIR/fuzz-corpus
ARTIFACTS=$BUILD_DIR/fuzz-artifacts
mkdir -p "$CORPUS" "$ARTIFACTS"
# Seed: each `// -----` chunk of each test is one input.
find "$ROOT/test" -name '*.mlir' | while read -r f; do
  awk -v dir="$CORPUS" -v base="$(basename "$f" .mlir)" '
    BEGIN { n = 0; out = dir "/" base "-" n ".mlir"; printf "" > out }
    /^\/\/ -----/ { close(out); n++; out = dir "/" base "-" n ".mlir"; printf "" > out; next }
    { print >> out }' "$f"
done

# Our ASan-instrumented code shares LLVM's bump allocators with the
# uninstrumented libMLIR.so; LLVM's manual slab poisoning would then report
# false use-after-poison errors, so it is turned off (real ASan checks stay).
export ASAN_OPTIONS=${ASAN_OPTIONS:-allow_user_poisoning=0}
echo "fuzz: $(ls "$CORPUS" | wc -l) seeds, ${SECONDS_TO_RUN}s"
if "$FUZZ" -seed="${FUZZ_SEED:-1}" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$ARTIFACTS/" -print_final_stats=1 "$CORPUS" \
    > "$BUILD_DIR/fuzz.log" 2>&1; then
  echo "fuzz: no crash ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$BUILD_DIR/fuzz.log" | grep -o '[0-9]*$') inputs)"
else
  echo "fuzz: FAILED; see $BUILD_DIR/fuzz.log and $ARTIFACTS/"
  grep -E "ERROR|SUMMARY|Test unit written" "$BUILD_DIR/fuzz.log" | head -5
  exit 1
fi
