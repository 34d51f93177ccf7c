#!/usr/bin/env bash
# Installs the meshrt component of a build into a temporary prefix, then
# configures, builds and runs the consumer project against it with
# find_package(MeshRT).
#
#   install-and-consume.sh CMAKE GENERATOR RUNTIME_BUILD_DIR CONSUMER_SRC \
#                          C_COMPILER CXX_COMPILER
set -eu
cmake_bin=$1 generator=$2 build_dir=$3 consumer=$4 cc=$5 cxx=$6
tmp=$(mktemp -d "${TMPDIR:-/tmp}/meshrt-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$cmake_bin" --install "$build_dir" --prefix "$tmp/prefix" --component meshrt
echo "--- installed files:"
(cd "$tmp/prefix" && find . -type f -o -type l | sort)
test -f "$tmp/prefix/include/meshrt/meshrt.h"
test -f "$tmp/prefix/include/meshrt/DeviceMesh.h"
ls "$tmp/prefix"/lib*/cmake/MeshRT/MeshRTConfig.cmake >/dev/null
"$cmake_bin" -S "$consumer" -B "$tmp/build" -G "$generator" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx"
"$cmake_bin" --build "$tmp/build" -j1
"$tmp/build/consumer-c"
"$tmp/build/consumer-cxx"
# The installed binaries must not depend on the build tree.
if ldd "$tmp/build/consumer-cxx" | grep -q "$build_dir"; then
  echo "FAIL: consumer links a library from the build tree"; exit 1
fi
echo PASS
