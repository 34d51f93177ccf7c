#!/usr/bin/env bash
# bench/compute/gpu_pack.sh: packs bench/compute for a lent GPU machine into
# .gpu/compute/ (ignored by git; about 6 MiB), run there by
# bench/compute/run_gpu.sh (copied into the pack as run_gpu.sh).
#
# gen.py writes the kernels at GPU sizes (COMPUTE_SIZES=gpu: matmul
# 1024/2048/4096, matmul2048 + bias + ReLU, the attention products of
# gpt_xl, the memory-bound kernels on 2^25 floats, jacobi 8192, and the GPT
# blocks gpt_small and gpt_large of run.sh plus gpt_xl: B=8, S=512, H=1024,
# 16 heads); build/bin/mesh-compile --target=cuda -c compiles them (default
# cuBLASLt products, --matmul-precision=highest; host code for the baseline
# x86-64, as that machine's CPU differs; extra flags in MESH_COMPILE_FLAGS,
# e.g. --gpu-matmul=kernels); driver.cpp is linked with -DMESH_GPU (device
# buffers, no -march=native) against libcudart, rpath $ORIGIN/lib. The pack:
#   compute-bench   the driver      kernels.json  the kernels' shapes, work
#   peers.py        torch's side    run_gpu.sh    the run (checks, rounds)
#   lib/            libmeshrt, libcudart and what they load beyond glibc,
#                   libstdc++ and the GPU driver (Open MPI's libraries)
#   MANIFEST        the commit, the sizes and the commands that built it
#
# Use: run here after `ninja -C build mesh-opt meshrt` (and after
# scripts/gpu-bundle.sh, which empties .gpu/), carry .gpu/compute (or .gpu)
# with the device tool, and on the GPU machine, from the repository root:
#   bash .gpu/compute/run_gpu.sh          (env: ROUNDS=5 CALLS=20 BUDGET_S=180)
# or let scripts/gpu-device-run.sh run it as its "compute" part. Here, under
# the emulated CUDA libraries, EMULATED=1 bench/compute/gpu_pack.sh also runs
# each kernel once (the driver links, starts, calls and prints its line;
# emulated kernels compute nothing, so values are not checked).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
PACK=${GPU_COMPUTE_PACK:-$ROOT/.gpu/compute}
CUDA=${CUDA_HOME:-/usr/local/cuda}
PY=/usr/bin/python3
CXX=${CXX:-clang++-22}
SIZES=${COMPUTE_SIZES:-gpu}
read -r -a MC_FLAGS <<< "${MESH_COMPILE_FLAGS:-}"

for f in "$BUILD/bin/mesh-compile" "$BUILD/lib/libmeshrt.so.0" "$CUDA/include/cuda_runtime_api.h"; do
  [ -e "$f" ] || { echo "gpu_pack: missing $f" >&2; exit 1; }
done
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
rm -rf "$PACK"
mkdir -p "$PACK/lib"

COMPUTE_SIZES=$SIZES "$PY" "$HERE/gen.py" "$W/kernels.mlir" "$PACK/kernels.json" "$W/kernels.inc"
compile=("$BUILD/bin/mesh-compile" --target=cuda --cpu=x86-64 -c "${MC_FLAGS[@]}"
         "$W/kernels.mlir" -o "$W/kernels.o")
"${compile[@]}"
# No -march=native: the GPU machine's CPU is not this one.
# shellcheck disable=SC2054  # -Wl,... flags, not array separators
link=("$CXX" -O2 -std=c++17 -DMESH_GPU -I"$W" -I"$ROOT/runtime/include" -I"$CUDA/include"
      "$HERE/driver.cpp" "$W/kernels.o" -o "$PACK/compute-bench"
      -L"$BUILD/lib" -lmeshrt -L"$CUDA/lib64" -lcudart
      -Wl,--as-needed -L/usr/lib/llvm-22/lib -lmlir_c_runner_utils -Wl,--no-as-needed
      '-Wl,-rpath,$ORIGIN/lib' -lm)
"${link[@]}"
cp "$HERE/peers.py" "$HERE/run_gpu.sh" "$PACK/"
chmod +x "$PACK/run_gpu.sh" "$PACK/peers.py"

# The libraries it loads, resolved here, minus what every Linux (glibc,
# libstdc++, libgcc) or the GPU machine (its driver, NCCL) has.
cp -L "$BUILD/lib/libmeshrt.so.0" "$PACK/lib/"
needed=$(LD_LIBRARY_PATH="$BUILD/lib:$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
           ldd "$PACK/compute-bench" | awk '$3 ~ /^\// {print $1 " " $3}' | sort -u)
while read -r name path; do
  case $name in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s*|libstdc++*|libcuda.so*|libnccl.so*|libmeshrt.so*) ;;
    *) cp -L "$path" "$PACK/lib/$name" ;;
  esac
done <<< "$needed"
missing=$(LD_LIBRARY_PATH="$PACK/lib" ldd "$PACK/compute-bench" | grep "not found" || true)
[ -z "$missing" ] || { echo "gpu_pack: unresolved in the pack: $missing" >&2; exit 1; }

{
  echo "bench/compute GPU pack, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- bench/compute 2>/dev/null || echo ' (bench/compute modified)')"
  echo "sizes: COMPUTE_SIZES=$SIZES"
  echo "compile: ${compile[*]}"
  echo "link: ${link[*]}"
  echo "kernels: $("$PY" -c "import json,sys; print(' '.join(k['name'] for k in json.load(open(sys.argv[1]))))" "$PACK/kernels.json")"
  echo "lib: $(cd "$PACK/lib" && echo *)"
} > "$PACK/MANIFEST"
echo "gpu_pack: $(du -sh "$PACK" | cut -f1) in $PACK"

if [ "${EMULATED:-0}" = 1 ]; then
  # The emulated CUDA driver, runtime and cuBLASLt of runtime/test (host
  # memory; kernels launch but compute nothing): each kernel once.
  emu=$BUILD/runtime/test/emulated-cuda
  [ -e "$emu/libcudart.so.13" ] || { echo "gpu_pack: no emulated CUDA in $emu (build meshrt-fake-cublaslt)" >&2; exit 1; }
  mapfile -t names < <("$PY" -c "import json,sys; print('\n'.join(k['name'] for k in json.load(open(sys.argv[1]))))" "$PACK/kernels.json")
  rc=0
  for k in "${names[@]}"; do
    LD_LIBRARY_PATH="$emu:$PACK/lib" MESHRT_CUDART_LIBRARY="$emu/libcudart.so.13" \
      MESHRT_CUBLASLT_LIBRARY="$emu/libcublasLt.so.13" FAKE_CUDA_DEVICES=1 \
      "$PACK/compute-bench" "$k" 1 "$W/$k.bin" || { echo "gpu_pack: $k failed under the emulation" >&2; rc=1; }
  done
  exit $rc
fi
