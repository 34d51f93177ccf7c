#!/usr/bin/env bash
# Packs what a lent GPU machine needs to run the project's GPU checks into
# .gpu/ (ignored by git), for the device tool's `carry`:
#   bin/      the runtime's NCCL and GPU tests, the GPU benchmark, and the
#             programs compiled with --target=cuda that check themselves:
#             mesh-exec-collectives-cuda and the five mesh-scenario-*-cuda
#             (built with everything else when CUDA was found at configure
#             time), plus any listed in GPU_PROGRAMS
#   lib/      libmeshrt, libcudart, and Debian's Open MPI with what it loads
#             (that machine has no MPI of ours; a world of one runs as an
#             isolated MPI singleton, no mpirun needed)
#   openmpi/  Open MPI's and PMIx's plugins
# scripts/gpu-device-run.sh (run on that machine) uses them; its "programs"
# part runs each program on 8 ranks sharing the GPU (MESHRT_BACKEND=mpi).
# Build first: ninja -C build
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
OUT=${GPU_BUNDLE:-$ROOT/.gpu}
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/openmpi"

for b in "$BUILD_DIR/runtime/test/meshrt-nccl-tests" \
         "$BUILD_DIR/runtime/test/meshrt-gpu-tests" \
         "$BUILD_DIR/runtime/test/meshrt-mpi-tests" \
         "$BUILD_DIR/bin/meshrt-bench-gpu" \
         "$BUILD_DIR/bin/mesh-exec-collectives-cuda" \
         "$BUILD_DIR"/bin/mesh-scenario-*-cuda ${GPU_PROGRAMS:-}; do
  [ -x "$b" ] || { echo "gpu-bundle: missing $b (build it first)" >&2; exit 1; }
  cp "$b" "$OUT/bin/"
done
cp -P "$BUILD_DIR"/lib/libmeshrt.so* "$OUT/lib/"
# gloo, for host programs under torchrun (found next to libmeshrt).
cp "$BUILD_DIR"/lib/libmeshrt_gloo.so "$OUT/lib/"
# Open MPI's launcher, for several ranks sharing the one GPU (MPI backend).
cp /usr/bin/orterun "$OUT/bin/mpirun"
cp /usr/bin/orted "$OUT/bin/orted"
cuda=${CUDA_HOME:-/usr/local/cuda}
cp -L "$cuda"/lib*/libcudart.so.13 "$OUT/lib/" 2>/dev/null ||
  cp -L "$(ldconfig -p | awk '/libcudart.so.13 /{print $NF; exit}')" "$OUT/lib/"

# Open MPI: the libraries our programs and its plugins link, minus glibc's.
multiarch=/usr/lib/x86_64-linux-gnu
plugins=$multiarch/openmpi/lib/openmpi3
cp -r "$plugins" "$OUT/openmpi/openmpi3"
cp -r "$multiarch/pmix2/lib/pmix" "$OUT/openmpi/pmix"
cp -r /usr/share/openmpi "$OUT/openmpi/share"   # help texts, for readable errors
needed=$( (ldd "$OUT"/bin/* "$OUT"/lib/libmeshrt.so.0 "$OUT"/lib/libmeshrt_gloo.so "$plugins"/mca_pmix_ext3x.so \
             "$plugins"/mca_ess_*.so "$plugins"/mca_btl_self.so \
             "$plugins"/mca_btl_vader.so 2>/dev/null || true) |
          awk '$3 ~ /^\// {print $1 " " $3}' | sort -u)
while read -r name path; do
  case $name in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s*|libstdc++*|libcuda.so*|libnccl.so*|libmeshrt*|libcudart*) ;;
    *) cp -L "$path" "$OUT/lib/$name" ;;
  esac
done <<< "$needed"
echo "gpu-bundle: $(du -sh "$OUT" | cut -f1) in $OUT"
