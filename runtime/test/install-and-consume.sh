#!/usr/bin/env bash
# Installs the meshrt component of a build into a temporary prefix, then
# configures, builds and runs the consumer project against it with
# find_package(MeshRT MAJOR.MINOR) (and checks that another minor is refused),
# and builds and runs its C program with a plain compiler command and
# `pkg-config --cflags --libs meshrt`, as a Makefile would.
#
#   install-and-consume.sh CMAKE GENERATOR RUNTIME_BUILD_DIR CONSUMER_SRC \
#                          C_COMPILER CXX_COMPILER VERSION
set -eu
cmake_bin=$1 generator=$2 build_dir=$3 consumer=$4 cc=$5 cxx=$6 version=$7
major=${version%%.*} minor=${version#*.}; minor=${minor%%.*}
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
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DMESHRT_VERSION="$major.$minor" -DMESHRT_WRONG_VERSION="$major.$((minor + 1))"
"$cmake_bin" --build "$tmp/build" -j1
"$tmp/build/consumer-c" | tee "$tmp/consumer-c.out"
grep -qx "consumer-c OK (meshrt $version)" "$tmp/consumer-c.out"
"$tmp/build/consumer-cxx"
# The installed binaries must not depend on the build tree.
if ldd "$tmp/build/consumer-cxx" | grep -q "$build_dir"; then
  echo "FAIL: consumer links a library from the build tree"; exit 1
fi

# pkg-config: meshrt.pc names the prefix installed to and the version.
pc=$(ls "$tmp/prefix"/lib*/pkgconfig/meshrt.pc)
echo "--- $pc:"; cat "$pc"
grep -qx "Version: $version" "$pc"
grep -qx "prefix=$tmp/prefix" "$pc"
if ! command -v pkg-config >/dev/null; then
  echo "FAIL: pkg-config is not installed (scripts/bootstrap.sh installs it)"
  exit 1
fi
export PKG_CONFIG_PATH=${pc%/meshrt.pc}
test "$(pkg-config --modversion meshrt)" = "$version"
libdir=$(pkg-config --variable=libdir meshrt)
static=
[ -e "$libdir/libmeshrt.so" ] || static=--static
# shellcheck disable=SC2046
"$cc" "$consumer/consumer.c" $(pkg-config $static --cflags --libs meshrt) \
  -o "$tmp/consumer-pc"
LD_LIBRARY_PATH=$libdir "$tmp/consumer-pc" | tee "$tmp/consumer-pc.out"
grep -qx "consumer-c OK (meshrt $version)" "$tmp/consumer-pc.out"
echo PASS
