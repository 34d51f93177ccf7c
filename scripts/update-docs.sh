#!/usr/bin/env bash
# Copies the reference docs generated from ODS into docs/reference/ (run after
# changing a .td file; test/docs-up-to-date.test fails until you do).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
cmake --build "$BUILD_DIR" --target mesh-docs
mkdir -p "$ROOT/docs/reference"
for f in "$BUILD_DIR"/docs/Mesh/*.md; do
  cp "$f" "$ROOT/docs/reference/$(basename "$f")"
done
echo "updated: $(ls "$ROOT/docs/reference" | tr '\n' ' ')"
