#!/usr/bin/env bash
# Installs what the project needs on Debian 12 (idempotent: skips what is there), then configures and
# builds into ${BUILD_DIR:-build}. Used by scripts/main.sh, scripts/test.sh and .ci/run.
#   SKIP_INSTALL=1  do not touch packages      BUILD_DIR=dir  build folder      JOBS=n  parallel jobs
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-$(nproc)}

PKGS=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 libclang-rt-22-dev
      clang-format-22 openmpi-bin libopenmpi-dev libopenblas-dev libgtest-dev cmake ninja-build python3 bc pkg-config
      libgloo-dev python3-numpy python3-torch)

install_packages() {
  local missing=()
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "bootstrap: all packages present"
    return
  fi
  echo "bootstrap: installing ${missing[*]}"
  local SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
}

[ "${SKIP_INSTALL:-0}" = 1 ] || install_packages

# Open MPI refuses to run as root and to oversubscribe unless told; our tests run 8 ranks on 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    ${CMAKE_ARGS:-}
fi
cmake --build "$BUILD_DIR" -j "$JOBS"
