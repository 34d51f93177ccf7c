#!/usr/bin/env bash
# Runs a command that must fail: checks that it exits non-zero (or with the
# code given by --rc), within --max-seconds, that its output matches a
# regular expression, and that it leaves no process behind. Exit code 77
# with a "SKIP:" line is passed through so ctest reports a skip.
#
#   expect-failure.sh [--rc N] [--max-seconds S] REGEX -- COMMAND...
#
# The command runs under an outer limit of S + 10 seconds (then SIGTERM, and
# SIGKILL 5 s later), so a hang fails here instead of at ctest's TIMEOUT.
# Every process it starts carries MESHRT_EXPECT_FAILURE_TAG=<unique> in its
# environment (mpirun passes it to the ranks); any process still carrying the
# tag once the command has returned (after a grace of 5 s for the launcher's
# last kills) is reported and killed, and the test fails.
# The last line before PASS/FAIL is machine-readable, for
# scripts/robustness.sh:
#   RESULT rc=<code> seconds=<elapsed> match=<yes|no> leftover=<count>
set -u
want_rc=""
max_s=60
while [ $# -gt 0 ]; do
  case "$1" in
    --rc) want_rc=$2; shift 2 ;;
    --max-seconds) max_s=$2; shift 2 ;;
    --) shift; break ;;
    *) regex=$1; shift ;;
  esac
done
tag="$$-$(date +%s%N)-$RANDOM"
limit=$(awk -v m="$max_s" 'BEGIN{print int(m + 10)}')

# Pids whose environment holds the tag (zombies have none: they are gone).
tagged() {
  grep -lzx "MESHRT_EXPECT_FAILURE_TAG=$tag" /proc/[0-9]*/environ 2>/dev/null |
    sed -e 's|^/proc/||' -e 's|/environ$||'
}

# The output goes to a file, not a pipe: a process left behind would hold a
# pipe open and stall the read here.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s.%N)
timeout -k 5 "$limit" env MESHRT_EXPECT_FAILURE_TAG="$tag" "$@" >"$log" 2>&1
rc=$?
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e - s}')
out=$(cat "$log")
printf '%s\n' "$out"
echo "--- exit code $rc after ${elapsed}s"
if [ "$rc" -eq 77 ] && grep -q '^SKIP' <<<"$out"; then
  exit 77
fi

left=$(tagged)
for _ in 1 2 3 4 5 6 7 8 9 10; do
  [ -z "$left" ] && break
  sleep 0.5
  left=$(tagged)
done
nleft=0
if [ -n "$left" ]; then
  nleft=$(wc -w <<<"$left")
  echo "processes left behind:"
  for pid in $left; do
    echo "  $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
  done
  # shellcheck disable=SC2086
  kill -9 $left 2>/dev/null
fi

match=no
grep -Eq -- "$regex" <<<"$out" && match=yes
echo "RESULT rc=$rc seconds=$elapsed match=$match leftover=$nleft"
fail=0
if [ "$rc" -eq 0 ]; then
  echo "FAIL: expected a non-zero exit code"; fail=1
fi
if [ -n "$want_rc" ] && [ "$rc" -ne "$want_rc" ]; then
  echo "FAIL: expected exit code $want_rc"; fail=1
fi
if [ "$match" != yes ]; then
  echo "FAIL: output does not match: $regex"; fail=1
fi
if ! awk -v e="$elapsed" -v m="$max_s" 'BEGIN{exit !(e <= m)}'; then
  echo "FAIL: took ${elapsed}s, more than ${max_s}s"; fail=1
fi
if [ "$nleft" -ne 0 ]; then
  echo "FAIL: $nleft process(es) left behind (killed now)"; fail=1
fi
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
