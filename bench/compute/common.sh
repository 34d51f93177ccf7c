# Sourced by bench/compute/run.sh and run_dist.sh: paths, one thread for
# every library, the peers installed from Debian (the bench's requirements,
# not the tests'), and the driver's link.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
ROUNDS=${ROUNDS:-5} CALLS=${CALLS:-7}
PY=/usr/bin/python3
MLIR_LIB=/usr/lib/llvm-22/lib
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
if ! "$PY" -c "import numpy, torch" 2>/dev/null; then
  SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q \
    --no-install-recommends python3-numpy python3-torch
  "$PY" -c "import numpy, torch" || { echo "bench/compute: numpy and torch are needed" >&2; exit 1; }
fi

# link_driver OUT DIR OBJECT [FLAGS...]: driver.cpp with DIR/kernels.inc and
# the compiled kernels OBJECT.
link_driver() {
  local out=$1 dir=$2 obj=$3; shift 3
  clang++-22 -O3 -march=native -std=c++17 "$@" -I"$dir" "$HERE/driver.cpp" "$obj" -o "$out" \
    -L"$BUILD/lib" -lmeshrt -Wl,-rpath,"$BUILD/lib" -L"$MLIR_LIB" -lmlir_c_runner_utils \
    -Wl,-rpath,"$MLIR_LIB" -lm
}

# same_blas_kernels CMD...: the peers (numpy and torch load the same
# OpenBLAS) get the kernels libmeshrt gives ours. libmeshrt names them from
# the CPU's features on Intel, where the library itself may not know the
# model and fall back to its SSE3 kernels (Debian 12's 0.3.21 on Emerald
# Rapids); without this the peers would run those, several times slower.
# CMD (a run of ours) prints the choice under MESHRT_DEBUG=INFO. An
# OPENBLAS_CORETYPE of the caller's is kept for every side.
same_blas_kernels() {
  [ -n "${OPENBLAS_CORETYPE:-}" ] && { echo "OpenBLAS kernels: $OPENBLAS_CORETYPE (OPENBLAS_CORETYPE)"; return; }
  local core
  core=$(MESHRT_DEBUG=INFO "$@" 2>&1 >/dev/null | sed -n 's/.*BLAS: .*, kernels \([A-Za-z0-9]*\).*/\1/p' | head -1)
  if [ -n "$core" ]; then
    export OPENBLAS_CORETYPE=$core
    echo "OpenBLAS kernels: $core for ours and the peers"
  fi
}
