#!/usr/bin/env bash
# The runtime's fault table (docs/runtime.md, "Faults"): every fault test
# (ctest label "fault": a rank that exits, is killed, stalls, skips a
# communicator or calls a different collective, and the mismatches that
# MESHRT_CHECK_COLLECTIVES=1 catches, on 2 and 8 ranks, on MPI and on the
# emulated NCCL), run REPEAT times, as one Markdown table: how long each took
# to a clean exit, its exit code, whether a process was left behind, and the
# first line of its message.
#
#   scripts/robustness-runtime.sh [--repeat N] [--build DIR] [--filter REGEX]
#
# Short mode (what the test command runs): --repeat 1, the default. Long
# mode: --repeat 10 (about 10 minutes on 2 cores). DIR defaults to
# build-rt, configured from runtime/ and built (ninja -j1) if it does not
# exist yet; the project's own build/ works too (--build build). Each test
# checks its own message, exit code, time limit and leftover processes
# (runtime/test/expect-failure.sh); the script exits 1 if any run failed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPEAT=1
BUILD=$ROOT/build-rt
FILTER=.
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) REPEAT=$2; shift 2 ;;
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --filter) FILTER=$2; shift 2 ;;
    -h|--help) sed -n '2,18s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "robustness-runtime: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$ROOT/runtime" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" -j 1 >/dev/null

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "machine: $(nproc) cores, $(mpirun --version | head -1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$ROOT" rev-parse --short HEAD), $REPEAT run(s) per test"
# The same step without a fault, for comparison: launch, start-up, one
# all_reduce, finalize, exit.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1 \
  OMPI_MCA_hwloc_base_binding_policy=none
cases=$(find "$BUILD" -name meshrt-error-cases -type f -perm -u+x | head -1)
for n in 2 8; do
  s=$(date +%s.%N)
  MESHRT_BACKEND=mpi mpirun -n "$n" "$cases" no-fault
  echo "no fault, $n ranks, mpi: $(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e - s}') s, exit code 0"
done
failed=0
for r in $(seq 1 "$REPEAT"); do
  if ! ctest --test-dir "$BUILD" -L fault -R "$FILTER" -V >"$TMP/run$r.log" 2>&1; then
    failed=1
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# One line per test run: name rc seconds leftover pass first-message-line.
for f in "$TMP"/run*.log; do
  awk '
    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
      # "1/42 Test #21: runtime.mpi.fault.exit-0-n2 ....   Passed  1.2 sec"
      n = $3; sub(/#/, "", n); sub(/:/, "", n)
      if (n in rc) printf "%s\t%s\t%s\t%s\t%s\t%s\n", $4, rc[n], sec[n], left[n], ($0 ~ /Passed/ ? 1 : 0), msg[n]
      next
    }
    /^[0-9]+: / {
      n = $1; sub(/:/, "", n)
      line = $0; sub(/^[0-9]+: /, "", line)
      if (line ~ /^RESULT /) {
        split(line, kv, " ")
        for (i in kv) {
          split(kv[i], p, "=")
          if (p[1] == "rc") rc[n] = p[2]
          if (p[1] == "seconds") sec[n] = p[2]
          if (p[1] == "leftover") left[n] = p[2]
        }
      } else if (!(n in msg) && (line ~ /^meshrt: rank / || line ~ /^(mpirun|mpiexec) noticed that process rank [0-9]+ .*exited on signal/)) {
        gsub(/\t/, " ", line)
        # A mismatch: what matters is the two calls at the end.
        cut = index(line, "(MESHRT_CHECK_COLLECTIVES=1): ")
        if (cut > 0) {
          head = line; sub(/: error: .*/, "", head)
          line = head ": ... " substr(line, cut + 30)
        }
        msg[n] = line
      }
    }' "$f"
done >"$TMP/rows.tsv"

# Aggregate the runs of each test: median and max time, the exit codes seen.
echo "| fault | backend | ranks | runs passed | time to clean exit, s: median (max) | exit code | processes left | message (first line, shortened) |"
echo "|---|---|---:|---:|---|---|---:|---|"
sort -t$'\t' -k1,1 -s "$TMP/rows.tsv" | awk -F'\t' '
  function flush() {
    if (name == "") return
    # Sort the times (insertion sort: a handful of values).
    for (i = 2; i <= k; ++i) { v = t[i]; j = i - 1; while (j > 0 && t[j] > v) { t[j + 1] = t[j]; --j } t[j + 1] = v }
    med = (k % 2) ? t[(k + 1) / 2] : (t[k / 2] + t[k / 2 + 1]) / 2
    split(name, parts, ".")
    backend = parts[2]; fault = parts[4]
    ranks = fault; sub(/.*-n/, "", ranks); sub(/-n[0-9]+$/, "", fault)
    m = first; if (length(m) > 260) m = substr(m, 1, 257) "..."
    gsub(/\|/, "\\|", m)
    printf "| %s | %s | %s | %d/%d | %.1f (%.1f) | %s | %d | `%s` |\n", fault, backend, ranks, pass, k, med, t[k], codes, left, m
  }
  {
    if ($1 != name) { flush(); name = $1; k = 0; pass = 0; left = 0; codes = ""; first = $6 }
    t[++k] = $3 + 0; pass += $5; left += $4
    if (index(" " codes " ", " " $2 " ") == 0) codes = (codes == "" ? $2 : codes " " $2)
  }
  END { flush() }'
if [ "$failed" -ne 0 ]; then
  echo
  echo "robustness-runtime: some runs failed (see the 'runs passed' column)"
  exit 1
fi
