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
