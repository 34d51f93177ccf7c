#!/usr/bin/env bash
# Runs a command that must fail: checks that it exits non-zero (or with the
# code given by --rc), within --max-seconds, and that its output matches a
# regular expression. Exit code 77 with a "SKIP:" line is passed through so
# ctest reports a skip.
#
#   expect-failure.sh [--rc N] [--max-seconds S] REGEX -- COMMAND...
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
start=$(date +%s.%N)
out=$("$@" 2>&1)
rc=$?
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e - s}')
printf '%s\n' "$out"
echo "--- exit code $rc after ${elapsed}s"
if [ "$rc" -eq 77 ] && grep -q '^SKIP' <<<"$out"; then
  exit 77
fi
fail=0
if [ "$rc" -eq 0 ]; then
  echo "FAIL: expected a non-zero exit code"; fail=1
fi
if [ -n "$want_rc" ] && [ "$rc" -ne "$want_rc" ]; then
  echo "FAIL: expected exit code $want_rc"; fail=1
fi
if ! grep -Eq -- "$regex" <<<"$out"; then
  echo "FAIL: output does not match: $regex"; fail=1
fi
if ! awk -v e="$elapsed" -v m="$max_s" 'BEGIN{exit !(e <= m)}'; then
  echo "FAIL: took ${elapsed}s, more than ${max_s}s"; fail=1
fi
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
