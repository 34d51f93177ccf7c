#!/usr/bin/env bash
# Runs on a lent GPU machine (the device tool), from the repository root,
# with .gpu/ (scripts/gpu-bundle.sh) carried. Writes logs under $OUT (or
# ./gpu-logs) and prints a summary last. Parts (GPU_PARTS, default all):
#   probe    the machine: GPU, driver, CUDA, NCCL, our libraries resolved
#   runtime  the runtime's NCCL tests and GPU tests, world of one
#   bench    bench/gpu: meshrt vs NCCL per call, compiled chain, matmul
#   gemm     bench/gpu's gemm and copy parts: compiled products against
#            cuBLASLt called directly (2048-8192; f32, TF32, BF16), and a
#            memory-bound compiled chain against a device-to-device copy
#   launch   torchrun (this machine's PyTorch) instead of mpirun: NCCL in a
#            world of one with the INFO start line, four processes on the
#            one GPU refused with a message that says why, and the
#            host-backend tests on 4 processes (gloo) on a GPU node
#   programs every other program in .gpu/bin, each run as its own check
#   compute  bench/compute's kernels and GPT blocks compiled for CUDA
#            against PyTorch on this GPU (.gpu/compute, bench/compute/gpu_pack.sh)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=$ROOT/.gpu
# Logs are written to a scratch folder and packed into $DEST/logs.tgz at
# exit (the device tool brings back at most 8 files).
DEST=${OUT:-$ROOT/gpu-logs}
LOG=$(mktemp -d /tmp/gpu-logs.XXXX)
mkdir -p "$DEST"
PARTS=",${GPU_PARTS:-probe,runtime,bench,gemm,launch,programs,compute},"
[ -d "$G/bin" ] || { echo "no .gpu/ bundle: run scripts/gpu-bundle.sh and carry .gpu"; exit 2; }

nccl=${MESHRT_NCCL_LIBRARY:-}
if [ -z "$nccl" ]; then
  nccl=$(ls /usr/local/cuda/lib64/libnccl.so.2 /usr/lib/x86_64-linux-gnu/libnccl.so.2 2>/dev/null | head -1)
  [ -n "$nccl" ] || nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
fi
[ -n "$nccl" ] || nccl=$(find /usr /opt -name 'libnccl.so.2*' 2>/dev/null | head -1)
export MESHRT_NCCL_LIBRARY=$nccl
# cuBLASLt: the toolkit's, else PyTorch's wheel's.
lt=${MESHRT_CUBLASLT_LIBRARY:-}
[ -n "$lt" ] || lt=$(ls /usr/local/cuda/lib64/libcublasLt.so.13 /usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so.13 2>/dev/null | head -1)
[ -n "$lt" ] || lt=$(find /usr /opt -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
export MESHRT_CUBLASLT_LIBRARY=$lt
export LD_LIBRARY_PATH=$G/lib:$(dirname "${nccl:-/nonexistent/x}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_MCA_ess_singleton_isolated=1 \
       OMPI_MCA_mca_base_component_path=$G/openmpi/openmpi3 \
       PMIX_MCA_mca_base_component_path=$G/openmpi/pmix \
       OMPI_MCA_mca_base_component_show_load_errors=0 \
       OPAL_PKGDATADIR=$G/openmpi/share PATH=$G/bin:$PATH \
       OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none \
       OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
       MESHRT_TIMEOUT_S=${MESHRT_TIMEOUT_S:-60}

summary=()
trap 'tar -C "$LOG" -czf "$DEST/logs.tgz" .; cp "$LOG"/summary.txt "$LOG"/bench-gpu.log "$LOG"/gemm.log "$LOG"/compute.log "$DEST"/ 2>/dev/null' EXIT
check() { # check NAME EXPECTED_RC COMMAND...: runs it, logs to $LOG/NAME.log
  local name=$1 want=$2 rc
  shift 2
  local t0=$SECONDS
  timeout 300 "$@" > "$LOG/$name.log" 2>&1
  rc=$?
  if [ "$rc" = "$want" ]; then summary+=("PASS $name (rc $rc, $((SECONDS - t0)) s)")
  else summary+=("FAIL $name (rc $rc, want $want; $LOG/$name.log)"); tail -15 "$LOG/$name.log"; fi
}

if [[ $PARTS == *,probe,* ]]; then
  {
    nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    grep PRETTY /etc/os-release; uname -r; ldd --version | head -1
    ls -la /usr/local/cuda 2>&1 | head -2; /usr/local/cuda/bin/nvcc --version 2>&1 | tail -2
    echo "NCCL: $nccl"; ls -la "$nccl" 2>&1
    echo "cuBLASLt: $lt"; ls -la "$lt" 2>&1
    python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuBLAS via torch"); print(torch.cuda.get_device_name(0))' 2>&1
    for b in "$G"/bin/*; do echo "== ldd $b"; ldd "$b" | grep -E "not found|meshrt|mpi|cudart|nccl"; done
  } > "$LOG/probe.log" 2>&1
  summary+=("probe: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1); NCCL $nccl; cuBLASLt $lt")
  cat "$LOG/probe.log" | head -40
fi

if [[ $PARTS == *,runtime,* ]]; then
  nt=$G/bin/meshrt-nccl-tests gt=$G/bin/meshrt-gpu-tests
  check nccl-probe-1 0 "$nt" --gpu-probe=1
  # Two ranks need two GPUs: the probe must say so and skip (77).
  check nccl-probe-2-skips 77 "$nt" --gpu-probe=2
  check nccl-tests-n1 0 env MESHRT_BACKEND=nccl "$nt"
  # (mode "stream" loads the emulated driver's fake image: emulation only)
  check gpu-mpi-backend-n1 0 "$gt" mpi-backend
  # Ranks sharing the one GPU: collectives on the MPI backend, staged.
  check gpu-mpi-backend-n8 0 "$G/bin/mpirun" -n 8 "$gt" mpi-backend
  check gpu-host-access-dies 3 "$gt" host-access
  check gpu-sync-ok 0 "$gt" sync-error   # no fault injected: returns
  check gpu-no-driver 1 env MESHRT_CUDA_DRIVER_LIBRARY=/nonexistent/libcuda.so.1 "$gt" no-driver
fi

if [[ $PARTS == *,bench,* ]]; then
  check bench-gpu 0 "$G/bin/meshrt-bench-gpu" --seconds-per-size "${BENCH_SECONDS:-1}"
  cat "$LOG/bench-gpu.log"
fi

if [[ $PARTS == *,gemm,* ]]; then
  check gemm 0 "$G/bin/meshrt-bench-gpu" --parts gemm,copy \
    --seconds-per-size "${BENCH_SECONDS:-1}"
  cat "$LOG/gemm.log"
fi

if [[ $PARTS == *,launch,* ]]; then
  # torchrun as this machine's PyTorch spells it, with no MPI launcher
  # variables: the ranks meet at the runtime's own store.
  cat > "$LOG/torchrun" <<'TR'
#!/usr/bin/env bash
n=$1; shift
for v in $(env | grep -oE '^(OMPI|PMIX)_[A-Za-z0-9_]*' || true); do unset "$v"; done
port=$((20000 + RANDOM % 20000))
exec python3 -m torch.distributed.run --nproc_per_node="$n" \
  --master_addr=127.0.0.1 --master_port="$port" --no-python "$@"
TR
  chmod +x "$LOG/torchrun"
  check torchrun-nccl-n1 0 env MESHRT_BACKEND=nccl MESHRT_DEBUG=INFO \
    "$LOG/torchrun" 1 "$G/bin/meshrt-nccl-tests"
  grep -h "meshrt: INFO" "$LOG/torchrun-nccl-n1.log" | head -2
  if grep -q "meshrt: INFO: rank 0 of 1.*init method env.*backend nccl" "$LOG/torchrun-nccl-n1.log"; then
    summary+=("PASS torchrun-nccl-n1 start line names env and nccl")
  else
    summary+=("FAIL torchrun-nccl-n1: no INFO start line naming env:// and nccl")
  fi
  # Four processes on the one GPU with NCCL: refused, with what to change.
  env MESHRT_BACKEND=nccl timeout 120 "$LOG/torchrun" 4 "$G/bin/meshrt-nccl-tests" \
    > "$LOG/torchrun-nccl-shared-gpu-n4.log" 2>&1
  rc=$?
  if [ "$rc" != 0 ] && grep -q "NCCL needs one GPU per process, and this node shows 1" \
       "$LOG/torchrun-nccl-shared-gpu-n4.log"; then
    summary+=("PASS torchrun-nccl-shared-gpu-n4 (refused as it must, rc $rc)")
  else
    summary+=("FAIL torchrun-nccl-shared-gpu-n4 (rc $rc: no refusal naming one GPU per process)")
    tail -5 "$LOG/torchrun-nccl-shared-gpu-n4.log"
  fi
  # A host program on a GPU node: the host backend (gloo), not NCCL.
  check torchrun-host-tests-n4 0 env MESHRT_DEBUG=INFO "$LOG/torchrun" 4 "$G/bin/meshrt-mpi-tests"
  if grep -q "meshrt: INFO: rank 0 of 4.*backend gloo.*device cpu" "$LOG/torchrun-host-tests-n4.log"; then
    summary+=("PASS torchrun-host-tests-n4 ran on gloo, device cpu")
  else
    summary+=("FAIL torchrun-host-tests-n4: the start line does not say gloo on cpu")
  fi
fi

if [[ $PARTS == *,programs,* ]]; then
  # Programs compiled with --target=cuda that check themselves, on
  # GPU_RANKS ranks (default 8) sharing the GPU, collectives staged by MPI.
  # A program named *-must-fail is a negative control (gen_partition.py
  # --corrupt): its kernels must really compute for its check to fail.
  for p in "$G"/bin/*; do
    name=$(basename "$p")
    case $name in meshrt-nccl-tests|meshrt-gpu-tests|meshrt-bench-gpu|meshrt-mpi-tests|mpirun|orted) continue ;; esac
    if [[ $name == *-must-fail ]]; then
      env MESHRT_BACKEND=mpi timeout 300 "$G/bin/mpirun" -n "${GPU_RANKS:-8}" "$p" > "$LOG/program-$name.log" 2>&1
      rc=$?
      if [ "$rc" != 0 ] && grep -q "differs from the unpartitioned" "$LOG/program-$name.log"; then
        summary+=("PASS program-$name (failed as it must, rc $rc)")
      else
        summary+=("FAIL program-$name (rc $rc: the negative control did not fail)")
      fi
      continue
    fi
    check "program-$name" 0 env MESHRT_BACKEND=mpi \
      "$G/bin/mpirun" -n "${GPU_RANKS:-8}" "$p"
  done
fi

if [[ $PARTS == *,compute,* ]]; then
  if [ -x "$G/compute/run_gpu.sh" ]; then
    check compute 0 "$G/compute/run_gpu.sh"
    cat "$LOG/compute.log"
  else
    summary+=("SKIP compute (no .gpu/compute: bench/compute/gpu_pack.sh)")
  fi
fi

echo
echo "=== summary"
printf '%s\n' "${summary[@]}" | tee "$LOG/summary.txt"
