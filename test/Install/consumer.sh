#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds test/Install/consumer
# against it with find_package(Mesh), and runs it on 8 ranks.
set -euo pipefail
BUILD_DIR=$1; SRC=$(cd "$(dirname "$0")" && pwd)/consumer
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
cmake --install "$BUILD_DIR" --prefix "$TMP/prefix" > "$TMP/install.log"
cmake -S "$SRC" -B "$TMP/build" -G Ninja -DCMAKE_PREFIX_PATH="$TMP/prefix" \
  -DCMAKE_CXX_COMPILER="${CXX:-c++}" > "$TMP/configure.log" || { cat "$TMP/configure.log"; exit 1; }
cmake --build "$TMP/build" > "$TMP/build.log" || { cat "$TMP/build.log"; exit 1; }
mpirun -n 8 "$TMP/build/consumer" | sort
echo "consumer: built against the installed package and ran on 8 ranks"
