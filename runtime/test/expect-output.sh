#!/usr/bin/env bash
# Runs a command that must succeed and print lines matching every given
# regular expression.
#
#   expect-output.sh -e REGEX [-e REGEX...] -- COMMAND...
set -u
regexes=()
while [ $# -gt 0 ]; do
  case "$1" in
    -e) regexes+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 -e REGEX... -- COMMAND..."; exit 2 ;;
  esac
done
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
echo "--- exit code $rc"
fail=0
[ "$rc" -eq 0 ] || { echo "FAIL: exit code $rc"; fail=1; }
for r in "${regexes[@]}"; do
  grep -Eq -- "$r" <<<"$out" || { echo "FAIL: no line matches: $r"; fail=1; }
done
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
