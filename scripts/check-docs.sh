#!/usr/bin/env bash
# Fails when docs/reference/ differs from the docs generated from ODS in the
# build folder given as $1. Fix with scripts/update-docs.sh.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GEN=${1:?usage: check-docs.sh BUILD_DIR}/docs/Mesh
status=0
for f in "$GEN"/*.md; do
  ref="$ROOT/docs/reference/$(basename "$f")"
  if ! diff -u "$ref" "$f" > /dev/null 2>&1; then
    echo "stale: docs/reference/$(basename "$f") differs from the ODS-generated $f"
    diff -u "$ref" "$f" | head -20
    status=1
  fi
done
for ref in "$ROOT"/docs/reference/*.md; do
  [ -f "$GEN/$(basename "$ref")" ] || { echo "stale: docs/reference/$(basename "$ref") is no longer generated"; status=1; }
done
# Every op, attribute and pass documents itself with an example.
if ! python3 - "$GEN" <<'PY'
import re, sys, pathlib
bad = []
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.md")):
    text = f.read_text()
    sections = re.split(r"^### ", text, flags=re.M)[1:]
    for sec in sections:
        title = sec.splitlines()[0]
        if "#### Cases:" in sec:  # an enum's case table; its attr has the example
            continue
        if "```mlir" not in sec and "```shell" not in sec:
            bad.append(f"{f.name}: {title} has no example")
for b in bad:
    print("undocumented:", b)
sys.exit(1 if bad else 0)
PY
then
  status=1
fi
if [ $status -ne 0 ]; then
  echo "docs are stale: run scripts/update-docs.sh and commit docs/reference/"
  exit 1
fi
echo "docs up to date"
