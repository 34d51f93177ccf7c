//===- GpuBench.cpp - compiled GPU programs against hand-written NCCL -----===//
//
// The GPU benchmark of docs/performance.md ("GPU"). Three parts, each run by
// every rank (one GPU per rank, NCCL backend):
//
//   call     meshrt_all_reduce_on_stream against ncclAllReduce on the same
//            communicator and stream: what one runtime call adds; in a world
//            of one also in place (send == recv), where NCCL moves no data.
//   chain    the compiled function @chain8 of kernels.mlir (eight
//            all_reduces: the first into a result buffer, the other seven in
//            place on it; one synchronisation at the end) against the same
//            eight ncclAllReduce calls on one stream followed by one
//            cudaStreamSynchronize: time per collective.
//   matmul   the compiled @matmul_bias_relu (2048^3, f32): GFLOP/s, and the
//            result checked against a double-precision host reference on
//            random inputs.
//   syncs    (emulated driver only, not in the default parts) ten calls of
//            @chain8, each between two marks in the driver's trace
//            (MESHRT_EMU_TRACE), so that check-syncs.sh can count the host
//            synchronisations and collectives of one call.
//
// Sizes run from 8 B to --max-bytes (default 256 MiB), f32 sum. The two
// sides of a comparison are interleaved: each round times a batch of one,
// then a batch of the other (the order alternates between rounds). Reported:
// the median time per collective of each, and the median of the per-round
// ratio. Results are checked (a world of n ranks multiplies by n per
// all_reduce), so a fast wrong answer fails the run.
//
//   mpirun -n 1 meshrt-bench-gpu [--max-bytes N] [--seconds-per-size S]
//                                [--parts call,chain,matmul]
//
//===----------------------------------------------------------------------===//

#include "meshrt/meshrt.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" {
struct Desc1 {
  float *Allocated;
  float *Aligned;
  int64_t Offset;
  int64_t Sizes[1];
  int64_t Strides[1];
};
struct Desc2 {
  float *Allocated;
  float *Aligned;
  int64_t Offset;
  int64_t Sizes[2];
  int64_t Strides[2];
};
void mesh_module_init();
void mesh_module_fini();
void _mlir_ciface_chain8(Desc1 *Result, Desc1 *X);
void _mlir_ciface_matmul_bias_relu(Desc2 *Result, Desc2 *A, Desc2 *B,
                                   Desc1 *Bias);
}

namespace {

int Rank = 0;
int64_t World = 1;

[[noreturn]] void fail(const std::string &Msg) {
  std::fprintf(stderr, "meshrt-bench-gpu (rank %d): %s\n", Rank, Msg.c_str());
  std::exit(1);
}

void checkCuda(cudaError_t E, const char *What) {
  if (E != cudaSuccess)
    fail(std::string(What) + ": " + cudaGetErrorString(E));
}
void checkNccl(ncclResult_t R, const char *What) {
  if (R != ncclSuccess)
    fail(std::string(What) + ": " + ncclGetErrorString(R));
}
void checkRt(meshrt_status S, const char *What) {
  if (S != MESHRT_SUCCESS)
    fail(std::string(What) + ": " + meshrt_last_error());
}

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  size_t N = V.size();
  return N % 2 ? V[N / 2] : (V[N / 2 - 1] + V[N / 2]) / 2;
}

struct Args {
  int64_t MaxBytes = int64_t(256) << 20;
  double SecondsPerSize = 1.0;
  std::string Parts = "call,chain,matmul";
};

Args parse(int argc, char **argv) {
  Args A;
  for (int I = 1; I < argc; ++I) {
    if (!std::strcmp(argv[I], "--max-bytes") && I + 1 < argc)
      A.MaxBytes = std::atoll(argv[++I]);
    else if (!std::strcmp(argv[I], "--seconds-per-size") && I + 1 < argc)
      A.SecondsPerSize = std::atof(argv[++I]);
    else if (!std::strcmp(argv[I], "--parts") && I + 1 < argc)
      A.Parts = argv[++I];
    else
      fail(std::string("unknown argument '") + argv[I] + "'");
  }
  return A;
}

bool wants(const Args &A, const char *Part) {
  return ("," + A.Parts + ",").find(std::string(",") + Part + ",") !=
         std::string::npos;
}

std::vector<int64_t> sizesUpTo(int64_t MaxBytes) {
  std::vector<int64_t> S;
  for (int64_t B = 8; B <= MaxBytes; B *= 8)
    S.push_back(B);
  if (S.back() != MaxBytes && MaxBytes >= 8)
    S.push_back(MaxBytes);
  return S;
}

/// Fills `Count` floats at `Dev` with a small-integer pattern (exact in f32
/// under repeated sums) derived from the rank and `Seed`.
void fillDevice(float *Dev, int64_t Count, int Seed) {
  std::vector<float> H(Count);
  for (int64_t I = 0; I < Count; ++I)
    H[I] = float((I * 7 + Seed + Rank) % 5);
  checkCuda(cudaMemcpy(Dev, H.data(), Count * 4, cudaMemcpyHostToDevice),
            "cudaMemcpy to device");
}

/// Checks that `Dev` holds Sum over ranks of the fillDevice pattern, times
/// `Factor`, at up to 4096 positions.
void checkReduced(const float *Dev, int64_t Count, int Seed, double Factor,
                  const char *What) {
  int64_t Step = std::max<int64_t>(1, Count / 4096);
  std::vector<float> H(Count);
  checkCuda(cudaMemcpy(H.data(), Dev, Count * 4, cudaMemcpyDeviceToHost),
            "cudaMemcpy to host");
  for (int64_t I = 0; I < Count; I += Step) {
    double Want = 0;
    for (int R = 0; R < World; ++R)
      Want += double((I * 7 + Seed + R) % 5);
    Want *= Factor;
    if (std::fabs(H[I] - Want) > 1e-6 * std::max(1.0, std::fabs(Want)))
      fail(std::string(What) + ": element " + std::to_string(I) + " is " +
           std::to_string(H[I]) + ", want " + std::to_string(Want));
  }
}

struct Comparison {
  std::vector<double> A, B, Ratio;
};

/// Times `BatchA` and `BatchB` (each runs `Calls` collectives and waits for
/// them) interleaved for about `Seconds`; returns per-collective times.
template <typename FA, typename FB>
Comparison interleave(double Seconds, int Calls, FA &&BatchA, FB &&BatchB) {
  BatchA();
  BatchB(); // warm-up: communicator buffers, allocator pools, module load
  Comparison C;
  double End = now() + Seconds;
  for (int Round = 0; Round < 7 || (now() < End && Round < 2000); ++Round) {
    double T[2];
    for (int K = 0; K < 2; ++K) {
      bool First = (K == 0) == (Round % 2 == 0);
      double Start = now();
      if (First)
        BatchA();
      else
        BatchB();
      (First ? T[0] : T[1]) = (now() - Start) / Calls;
    }
    C.A.push_back(T[0]);
    C.B.push_back(T[1]);
    C.Ratio.push_back(T[0] / T[1]);
  }
  return C;
}

void printRow(int64_t Bytes, const Comparison &C) {
  if (Rank != 0)
    return;
  std::printf("| %10lld | %10.2f | %10.2f | %6.3f | %5zu |\n", (long long)Bytes,
              median(C.A) * 1e6, median(C.B) * 1e6, median(C.Ratio),
              C.Ratio.size());
  std::fflush(stdout);
}

void header(const char *Title, const char *A, const char *B) {
  if (Rank != 0)
    return;
  std::printf("\n## %s\n\n| bytes | %s us | %s us | ratio | rounds |\n"
              "|---:|---:|---:|---:|---:|\n",
              Title, A, B);
}

/// One runtime call against one NCCL call, out of place or in place (one
/// buffer as send and receive; in a world of one, NCCL then moves no data,
/// so this shows the runtime's cost per call against NCCL's least).
void benchCall(const Args &A, meshrt_comm_t Comm, ncclComm_t Nccl,
               cudaStream_t Stream, bool InPlace) {
  header(InPlace ? "one call in place: meshrt_all_reduce_on_stream vs "
                   "ncclAllReduce, send == recv (per call)"
                 : "one call: meshrt_all_reduce_on_stream vs ncclAllReduce, "
                   "same communicator and stream (per call)",
         "meshrt", "nccl");
  for (int64_t Bytes : sizesUpTo(A.MaxBytes)) {
    int64_t Count = Bytes / 4;
    float *Send, *Recv;
    checkCuda(cudaMalloc(&Send, Bytes), "cudaMalloc");
    Recv = Send;
    if (!InPlace)
      checkCuda(cudaMalloc(&Recv, Bytes), "cudaMalloc");
    // In place, each call multiplies by the world: start from ones.
    fillDevice(Send, Count, 1);
    int Calls = Bytes <= (1 << 20) ? 50 : Bytes <= (32 << 20) ? 10 : 4;
    auto Ours = [&] {
      for (int I = 0; I < Calls; ++I)
        checkRt(meshrt_all_reduce_on_stream(Comm, Send, Recv, Count, MESHRT_F32,
                                            MESHRT_SUM, Stream),
                "meshrt_all_reduce_on_stream");
      checkRt(meshrt_stream_synchronize(Stream), "meshrt_stream_synchronize");
    };
    auto Raw = [&] {
      for (int I = 0; I < Calls; ++I)
        checkNccl(ncclAllReduce(Send, Recv, Count, ncclFloat32, ncclSum, Nccl,
                                Stream),
                  "ncclAllReduce");
      checkCuda(cudaStreamSynchronize(Stream), "cudaStreamSynchronize");
    };
    Comparison C = interleave(A.SecondsPerSize, Calls, Ours, Raw);
    checkReduced(Recv, Count, 1, 1.0, "meshrt_all_reduce_on_stream");
    printRow(Bytes, C);
    cudaFree(Send);
    if (!InPlace)
      cudaFree(Recv);
  }
}

/// Host synchronisations and collectives per call of @chain8, counted by
/// the runtime (meshrt_get_stats): on a real GPU, as the emulated driver's
/// trace counts them in CI.
void countChainSyncs() {
  constexpr int Calls = 100;
  constexpr int64_t Count = 256;
  float *X;
  checkCuda(cudaMalloc(&X, Count * 4), "cudaMalloc");
  fillDevice(X, Count, 2);
  Desc1 In{X, X, 0, {Count}, {1}};
  meshrt_stats Before, After;
  checkRt(meshrt_get_stats(&Before), "meshrt_get_stats");
  for (int Call = 0; Call < Calls; ++Call) {
    Desc1 Out{};
    _mlir_ciface_chain8(&Out, &In);
    checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
  }
  checkRt(meshrt_get_stats(&After), "meshrt_get_stats");
  cudaFree(X);
  int64_t Syncs =
      After.stream_synchronizations - Before.stream_synchronizations;
  int64_t Collectives = After.collectives - Before.collectives;
  std::printf("\nhost synchronisations per call of @chain8 (meshrt_get_stats, "
              "%d calls): %.2f; collectives per call: %.2f\n",
              Calls, double(Syncs) / Calls, double(Collectives) / Calls);
  if (Syncs != Calls || Collectives != 8 * Calls)
    fail("@chain8 should synchronise once and run 8 collectives a call");
}

void benchChain(const Args &A, ncclComm_t Nccl, cudaStream_t Stream) {
  header("a chain of 8 all_reduces: compiled @chain8 (one sync) vs 8 "
         "ncclAllReduce + cudaStreamSynchronize (per collective)",
         "compiled", "nccl");
  for (int64_t Bytes : sizesUpTo(A.MaxBytes)) {
    int64_t Count = Bytes / 4;
    float *X, *P;
    checkCuda(cudaMalloc(&X, Bytes), "cudaMalloc");
    checkCuda(cudaMalloc(&P, Bytes), "cudaMalloc");
    fillDevice(X, Count, 2);
    int Batches = Bytes <= (1 << 20) ? 8 : Bytes <= (32 << 20) ? 2 : 1;
    Desc1 In{X, X, 0, {Count}, {1}};
    Desc1 Out{};
    auto Compiled = [&] {
      for (int I = 0; I < Batches; ++I) {
        _mlir_ciface_chain8(&Out, &In);
        // The caller owns the result: freed in stream order, as host code
        // that consumes a compiled function's output would.
        checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
      }
    };
    // What the compiled chain does, by hand: the input is the caller's, so
    // the first all_reduce writes a result buffer and the other seven reduce
    // that buffer in place.
    auto Raw = [&] {
      for (int I = 0; I < Batches; ++I) {
        for (int K = 0; K < 8; ++K)
          checkNccl(ncclAllReduce(K == 0 ? X : P, P, Count, ncclFloat32,
                                  ncclSum, Nccl, Stream),
                    "ncclAllReduce");
        checkCuda(cudaStreamSynchronize(Stream), "cudaStreamSynchronize");
      }
    };
    Comparison C = interleave(A.SecondsPerSize, 8 * Batches, Compiled, Raw);
    // One more call, its result kept and checked: world^8 times the sum.
    _mlir_ciface_chain8(&Out, &In);
    if (Out.Sizes[0] != Count)
      fail("@chain8 returned " + std::to_string(Out.Sizes[0]) + " elements");
    checkReduced(Out.Aligned, Count, 2, std::pow(double(World), 7), "@chain8");
    checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
    checkReduced(P, Count, 2, std::pow(double(World), 7), "nccl chain");
    printRow(Bytes, C);
    cudaFree(X);
    cudaFree(P);
  }

  countChainSyncs();
}

/// Ten calls of @chain8 between trace marks of the emulated driver.
void markSyncs() {
  using TraceFn = void (*)(const char *, ...);
  auto Mark = reinterpret_cast<TraceFn>(dlsym(RTLD_DEFAULT, "fakeCudaTrace"));
  if (!Mark)
    fail("--parts syncs needs the emulated CUDA driver (its trace)");
  constexpr int64_t Count = 256;
  float *X;
  checkCuda(cudaMalloc(&X, Count * 4), "cudaMalloc");
  fillDevice(X, Count, 3);
  Desc1 In{X, X, 0, {Count}, {1}};
  for (int Call = 0; Call < 10; ++Call) {
    Desc1 Out{};
    Mark("mark call %d", Call);
    _mlir_ciface_chain8(&Out, &In);
    Mark("mark end");
    checkReduced(Out.Aligned, Count, 3, std::pow(double(World), 7), "@chain8");
    checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
  }
  cudaFree(X);
}

void benchMatmul(const Args &A) {
  constexpr int64_t N = 2048;
  std::mt19937 Gen(1234 + Rank);
  std::uniform_real_distribution<float> Dist(-1, 1);
  std::vector<float> HA(N * N), HB(N * N), HBias(N), HOut(N * N);
  for (float &V : HA)
    V = Dist(Gen);
  for (float &V : HB)
    V = Dist(Gen);
  for (float &V : HBias)
    V = Dist(Gen);
  float *DA, *DB, *DBias;
  checkCuda(cudaMalloc(&DA, N * N * 4), "cudaMalloc");
  checkCuda(cudaMalloc(&DB, N * N * 4), "cudaMalloc");
  checkCuda(cudaMalloc(&DBias, N * 4), "cudaMalloc");
  checkCuda(cudaMemcpy(DA, HA.data(), N * N * 4, cudaMemcpyHostToDevice),
            "h2d");
  checkCuda(cudaMemcpy(DB, HB.data(), N * N * 4, cudaMemcpyHostToDevice),
            "h2d");
  checkCuda(cudaMemcpy(DBias, HBias.data(), N * 4, cudaMemcpyHostToDevice),
            "h2d");
  Desc2 MA{DA, DA, 0, {N, N}, {N, 1}}, MB{DB, DB, 0, {N, N}, {N, 1}}, Out{};
  Desc1 MBias{DBias, DBias, 0, {N}, {1}};
  _mlir_ciface_matmul_bias_relu(&Out, &MA, &MB, &MBias); // warm-up, loads
  checkCuda(
      cudaMemcpy(HOut.data(), Out.Aligned, N * N * 4, cudaMemcpyDeviceToHost),
      "d2h");
  checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
  // Check 512 random entries against a double-precision reference.
  double MaxRel = 0;
  for (int S = 0; S < 512; ++S) {
    int64_t I = Gen() % N, J = Gen() % N;
    double Acc = 0, Mag = 0;
    for (int64_t K = 0; K < N; ++K) {
      Acc += double(HA[I * N + K]) * HB[K * N + J];
      Mag += std::fabs(double(HA[I * N + K]) * HB[K * N + J]);
    }
    double Want = std::max(0.0, Acc + HBias[J]);
    double Rel = std::fabs(HOut[I * N + J] - Want) / (Mag + 1e-30);
    if (!(Rel < 1e-5))
      fail("@matmul_bias_relu: element (" + std::to_string(I) + ", " +
           std::to_string(J) + ") is " + std::to_string(HOut[I * N + J]) +
           ", want " + std::to_string(Want));
    MaxRel = std::max(MaxRel, Rel);
  }
  std::vector<double> T;
  double End = now() + std::max(1.0, A.SecondsPerSize);
  while (T.size() < 3 || (now() < End && T.size() < 200)) {
    double Start = now();
    _mlir_ciface_matmul_bias_relu(&Out, &MA, &MB, &MBias);
    T.push_back(now() - Start);
    checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
  }
  double Flops = 2.0 * N * N * N + 2.0 * N * N;
  if (Rank == 0)
    std::printf("\n## compiled @matmul_bias_relu, %lldx%lldx%lld f32\n\n"
                "median %.3f ms over %zu calls: %.1f GFLOP/s; 512 sampled "
                "entries within %.2e (relative to sum |a*b|) of a float64 "
                "reference\n",
                (long long)N, (long long)N, (long long)N, median(T) * 1e3,
                T.size(), Flops / median(T) / 1e9, MaxRel);
  cudaFree(DA);
  cudaFree(DB);
  cudaFree(DBias);
}

} // namespace

int main(int argc, char **argv) {
  Args A = parse(argc, argv);
  mesh_module_init(); // meshrt_init, device selection, the world mesh
  int64_t R;
  checkRt(meshrt_world_rank(&R), "meshrt_world_rank");
  Rank = int(R);
  checkRt(meshrt_world_size(&World), "meshrt_world_size");
  meshrt_backend Backend;
  checkRt(meshrt_get_backend(&Backend), "meshrt_get_backend");
  if (Backend != MESHRT_BACKEND_NCCL)
    fail("the runtime did not pick the NCCL backend (set MESHRT_BACKEND=nccl "
         "to see why)");
  meshrt_mesh_t Mesh;
  checkRt(meshrt_mesh_lookup("world", &Mesh), "meshrt_mesh_lookup");
  const char *Axes[] = {"x"};
  meshrt_comm_t Comm;
  checkRt(meshrt_comm_get_by_names(Mesh, 1, Axes, &Comm), "meshrt_comm_get");
  void *Native;
  checkRt(meshrt_comm_native_handle(Comm, &Native), "native handle");
  ncclComm_t Nccl = static_cast<ncclComm_t>(Native);
  void *S;
  checkRt(meshrt_gpu_stream(&S), "meshrt_gpu_stream");
  cudaStream_t Stream = static_cast<cudaStream_t>(S);
  int Device = -1, Version = 0, Driver = 0;
  cudaGetDevice(&Device);
  ncclGetVersion(&Version);
  cudaDriverGetVersion(&Driver);
  if (Rank == 0) {
    cudaDeviceProp P;
    checkCuda(cudaGetDeviceProperties(&P, Device), "cudaGetDeviceProperties");
    std::printf("device %d: %s (sm_%d%d, %d SMs), CUDA driver %d, NCCL %d, "
                "world %lld\n",
                Device, P.name, P.major, P.minor, P.multiProcessorCount, Driver,
                Version, (long long)World);
  }
  if (wants(A, "call")) {
    benchCall(A, Comm, Nccl, Stream, /*InPlace=*/false);
    // In place, values grow by the world each call: a world of one only.
    if (World == 1)
      benchCall(A, Comm, Nccl, Stream, /*InPlace=*/true);
  }
  if (wants(A, "chain"))
    benchChain(A, Nccl, Stream);
  if (wants(A, "matmul"))
    benchMatmul(A);
  if (wants(A, "syncs"))
    markSyncs();
  mesh_module_fini();
  return 0;
}
