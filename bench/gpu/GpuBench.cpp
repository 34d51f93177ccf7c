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
//   gemm     C = relu(A B + bias) at 2048, 4096 and 8192: the compiled
//            functions of gemm.mlir.in (one per --matmul-precision: exact
//            f32, TF32, BF16 on f32 operands, bf16 operands, and bf16
//            operands into an f32 result) against
//            the same product made directly on cuBLASLt (dlopen'ed; same
//            stream, layouts, epilogue, compute type and a 32 MiB
//            workspace), interleaved; both synchronise after each call, as
//            a compiled call does (also reported: cuBLASLt's rate with no
//            synchronisation between calls). TFLOP/s, ratio, and the
//            results checked against each other and a float64 reference.
//   copy     the compiled @ew_chain (8 B read, 4 B written per element)
//            against cudaMemcpyAsync device to device of the same count,
//            at 2^26 and 2^28 elements: GB/s, bytes read plus written.
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
//                                [--parts call,chain,matmul,gemm,copy]
//                                [--gemm-sizes 2048,4096,8192]
//
//===----------------------------------------------------------------------===//

#include "meshrt/meshrt.h"

#include <cublasLt.h>
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
#include <initializer_list>
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
void _mlir_ciface_ew_chain(Desc1 *Result, Desc1 *X, Desc1 *Y);
// gemm.mlir.in, one per arithmetic (bf16 operands travel as 16-bit words
// behind the same descriptor layout).
void _mlir_ciface_gemm_bias_relu_highest(Desc2 *, Desc2 *, Desc2 *, Desc1 *);
void _mlir_ciface_gemm_bias_relu_tf32(Desc2 *, Desc2 *, Desc2 *, Desc1 *);
void _mlir_ciface_gemm_bias_relu_bf16(Desc2 *, Desc2 *, Desc2 *, Desc1 *);
void _mlir_ciface_gemm_bias_relu_bf16data(Desc2 *, Desc2 *, Desc2 *, Desc1 *);
void _mlir_ciface_gemm_bias_relu_bf16mixed(Desc2 *, Desc2 *, Desc2 *, Desc1 *);
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

/// One product's results to check: its name and its N x N values.
struct NamedResult {
  const char *Name;
  const std::vector<float> *Values;
};

/// Checks `Samples` random entries of each of `Results` (N x N values of
/// relu(A B + bias), row-major) against a float64 reference, and returns the
/// largest error relative to sum |a b|; an entry beyond `Tolerance` ends the
/// run with a message naming `What`, the result and the entry.
double checkSampledBiasRelu(const std::vector<float> &A,
                            const std::vector<float> &B,
                            const std::vector<float> &Bias, int64_t N,
                            std::initializer_list<NamedResult> Results,
                            int Samples, double Tolerance, std::mt19937 &Gen,
                            const std::string &What) {
  double MaxRel = 0;
  for (int S = 0; S < Samples; ++S) {
    int64_t I = Gen() % N, J = Gen() % N;
    double Acc = 0, Mag = 0;
    for (int64_t K = 0; K < N; ++K) {
      Acc += double(A[I * N + K]) * B[K * N + J];
      Mag += std::fabs(double(A[I * N + K]) * B[K * N + J]);
    }
    double Want = std::max(0.0, Acc + Bias[J]);
    for (const NamedResult &R : Results) {
      double Got = (*R.Values)[I * N + J];
      double Rel = std::fabs(Got - Want) / (Mag + 1e-30);
      if (!(Rel < Tolerance))
        fail(What + ": " + R.Name + " element (" + std::to_string(I) + ", " +
             std::to_string(J) + ") is " + std::to_string(Got) + ", want " +
             std::to_string(Want));
      MaxRel = std::max(MaxRel, Rel);
    }
  }
  return MaxRel;
}

struct Args {
  int64_t MaxBytes = int64_t(256) << 20;
  double SecondsPerSize = 1.0;
  std::string Parts = "call,chain,matmul";
  std::vector<int64_t> GemmSizes = {2048, 4096, 8192};
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
    else if (!std::strcmp(argv[I], "--gemm-sizes") && I + 1 < argc) {
      A.GemmSizes.clear();
      for (const char *P = argv[++I]; *P;) {
        char *End;
        A.GemmSizes.push_back(std::strtoll(P, &End, 10));
        if (End == P || A.GemmSizes.back() <= 0)
          fail("--gemm-sizes: a comma-separated list of positive sizes");
        P = *End == ',' ? End + 1 : End;
      }
    } else
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
  double MaxRel = checkSampledBiasRelu(HA, HB, HBias, N, {{"compiled", &HOut}},
                                       512, 1e-5, Gen, "@matmul_bias_relu");
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

//===----------------------------------------------------------------------===//
// gemm: compiled products against cuBLASLt called directly
//===----------------------------------------------------------------------===//

uint16_t toBf16(float F) {
  uint32_t U;
  std::memcpy(&U, &F, 4);
  U += 0x7fff + ((U >> 16) & 1); // round to nearest even (finite inputs)
  return uint16_t(U >> 16);
}
float fromBf16(uint16_t H) {
  uint32_t U = uint32_t(H) << 16;
  float F;
  std::memcpy(&F, &U, 4);
  return F;
}

/// cuBLASLt, loaded the way the runtime loads it (MESHRT_CUBLASLT_LIBRARY,
/// else libcublasLt.so.13), with the header's own types.
struct Lt {
  void *Lib = nullptr;
#define LT_FN(Name) decltype(&::Name) Name = nullptr;
  LT_FN(cublasLtCreate)
  LT_FN(cublasLtDestroy)
  LT_FN(cublasLtGetVersion)
  LT_FN(cublasLtMatmulDescCreate)
  LT_FN(cublasLtMatmulDescDestroy)
  LT_FN(cublasLtMatmulDescSetAttribute)
  LT_FN(cublasLtMatrixLayoutCreate)
  LT_FN(cublasLtMatrixLayoutDestroy)
  LT_FN(cublasLtMatmulPreferenceCreate)
  LT_FN(cublasLtMatmulPreferenceDestroy)
  LT_FN(cublasLtMatmulPreferenceSetAttribute)
  LT_FN(cublasLtMatmulAlgoGetHeuristic)
  LT_FN(cublasLtMatmul)
#undef LT_FN
  Lt() {
    const char *Env = std::getenv("MESHRT_CUBLASLT_LIBRARY");
    const char *Name = Env && *Env ? Env : "libcublasLt.so.13";
    Lib = dlopen(Name, RTLD_NOW | RTLD_LOCAL);
    if (!Lib)
      fail(std::string("gemm: cannot load ") + Name + ": " + dlerror());
#define LT_LOAD(Name)                                                          \
  Name = reinterpret_cast<decltype(Name)>(dlsym(Lib, #Name));                  \
  if (!Name)                                                                   \
    fail("gemm: " #Name " is not in the cuBLASLt library");
    LT_LOAD(cublasLtCreate)
    LT_LOAD(cublasLtDestroy)
    LT_LOAD(cublasLtGetVersion)
    LT_LOAD(cublasLtMatmulDescCreate)
    LT_LOAD(cublasLtMatmulDescDestroy)
    LT_LOAD(cublasLtMatmulDescSetAttribute)
    LT_LOAD(cublasLtMatrixLayoutCreate)
    LT_LOAD(cublasLtMatrixLayoutDestroy)
    LT_LOAD(cublasLtMatmulPreferenceCreate)
    LT_LOAD(cublasLtMatmulPreferenceDestroy)
    LT_LOAD(cublasLtMatmulPreferenceSetAttribute)
    LT_LOAD(cublasLtMatmulAlgoGetHeuristic)
    LT_LOAD(cublasLtMatmul)
#undef LT_LOAD
  }
};

void checkLt(cublasStatus_t S, const char *What) {
  if (S != CUBLAS_STATUS_SUCCESS)
    fail(std::string("gemm: ") + What + " returned status " +
         std::to_string(int(S)));
}

/// One row-major product C[n x n] = relu(A B + bias) made directly on
/// cuBLASLt: C^T = B^T A^T in column-major layouts (our B is cuBLASLt's A),
/// the bias along cuBLASLt's rows, RELU_BIAS, the heuristic's first
/// algorithm with a 32 MiB workspace.
struct RawGemm {
  Lt &L;
  cublasLtHandle_t H = nullptr;
  cublasLtMatmulDesc_t Desc = nullptr;
  cublasLtMatrixLayout_t LA = nullptr, LB = nullptr, LC = nullptr;
  cublasLtMatmulPreference_t Pref = nullptr;
  cublasLtMatmulHeuristicResult_t Algo{};
  void *Workspace = nullptr;
  size_t WorkspaceBytes = size_t(32) << 20;
  const void *A, *B;
  void *C;
  cudaStream_t Stream;

  RawGemm(Lt &L, int64_t N, cudaDataType_t InType, cudaDataType_t OutType,
          cublasComputeType_t Compute, const void *A, const void *B,
          const void *Bias, void *C, cudaStream_t Stream)
      : L(L), A(A), B(B), C(C), Stream(Stream) {
    checkLt(L.cublasLtCreate(&H), "cublasLtCreate");
    checkLt(L.cublasLtMatmulDescCreate(&Desc, Compute, CUDA_R_32F),
            "cublasLtMatmulDescCreate");
    cublasLtEpilogue_t Epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    checkLt(L.cublasLtMatmulDescSetAttribute(
                Desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &Epi, sizeof(Epi)),
            "epilogue");
    checkLt(L.cublasLtMatmulDescSetAttribute(
                Desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &Bias, sizeof(Bias)),
            "bias pointer");
    checkLt(L.cublasLtMatrixLayoutCreate(&LA, InType, N, N, N), "layout");
    checkLt(L.cublasLtMatrixLayoutCreate(&LB, InType, N, N, N), "layout");
    checkLt(L.cublasLtMatrixLayoutCreate(&LC, OutType, N, N, N), "layout");
    checkLt(L.cublasLtMatmulPreferenceCreate(&Pref), "preference");
    checkLt(L.cublasLtMatmulPreferenceSetAttribute(
                Pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &WorkspaceBytes,
                sizeof(WorkspaceBytes)),
            "workspace size");
    int Found = 0;
    checkLt(L.cublasLtMatmulAlgoGetHeuristic(H, Desc, LA, LB, LC, LC, Pref, 1,
                                             &Algo, &Found),
            "cublasLtMatmulAlgoGetHeuristic");
    if (Found < 1)
      fail("gemm: cuBLASLt's heuristic found no algorithm");
    checkCuda(cudaMalloc(&Workspace, WorkspaceBytes), "cudaMalloc workspace");
  }
  ~RawGemm() {
    cudaFree(Workspace);
    L.cublasLtMatmulPreferenceDestroy(Pref);
    L.cublasLtMatrixLayoutDestroy(LA);
    L.cublasLtMatrixLayoutDestroy(LB);
    L.cublasLtMatrixLayoutDestroy(LC);
    L.cublasLtMatmulDescDestroy(Desc);
    L.cublasLtDestroy(H);
  }
  void enqueue() {
    float One = 1, Zero = 0;
    checkLt(L.cublasLtMatmul(H, Desc, &One, B, LA, A, LB, &Zero, C, LC, C, LC,
                             &Algo.algo, Workspace, WorkspaceBytes, Stream),
            "cublasLtMatmul");
  }
};

struct GemmVariant {
  const char *Name, *Label;
  void (*Fn)(Desc2 *, Desc2 *, Desc2 *, Desc1 *);
  bool Bf16In, Bf16Out; // A and B; C and the bias (else f32).
  cublasComputeType_t Compute;
  double Tolerance; // relative to sum |a b|, against float64
};

void benchGemm(const Args &A, cudaStream_t Stream) {
  Lt L;
  const GemmVariant Variants[] = {
      {"highest", "f32, exact (COMPUTE_32F)",
       _mlir_ciface_gemm_bias_relu_highest, false, false, CUBLAS_COMPUTE_32F,
       1e-5},
      {"tf32", "f32, TF32 inputs (COMPUTE_32F_FAST_TF32)",
       _mlir_ciface_gemm_bias_relu_tf32, false, false,
       CUBLAS_COMPUTE_32F_FAST_TF32, 2e-3},
      {"bf16", "f32, BF16 inputs (COMPUTE_32F_FAST_16BF)",
       _mlir_ciface_gemm_bias_relu_bf16, false, false,
       CUBLAS_COMPUTE_32F_FAST_16BF, 1e-2},
      {"bf16data", "bf16 operands and result (COMPUTE_32F)",
       _mlir_ciface_gemm_bias_relu_bf16data, true, true, CUBLAS_COMPUTE_32F,
       1e-2},
      // The reference reads the same rounded inputs: only f32 sums differ.
      {"bf16mixed", "bf16 operands into f32 (COMPUTE_32F)",
       _mlir_ciface_gemm_bias_relu_bf16mixed, true, false, CUBLAS_COMPUTE_32F,
       1e-5}};
  if (Rank == 0)
    std::printf("\n## gemm: compiled relu(A B + bias) against cuBLASLt "
                "(version %zu) called directly\n\n"
                "| n | arithmetic | compiled TFLOP/s | cuBLASLt TFLOP/s | "
                "compiled / cuBLASLt (median, min-max) | cuBLASLt unsynced "
                "TFLOP/s | max error |\n|---:|---|---:|---:|---:|---:|---:|\n",
                L.cublasLtGetVersion());
  std::mt19937 Gen(99 + Rank);
  std::uniform_real_distribution<float> Dist(-1, 1);
  for (int64_t N : A.GemmSizes) {
    std::vector<float> HA(N * N), HB(N * N), HBias(N);
    for (float &V : HA)
      V = Dist(Gen);
    for (float &V : HB)
      V = Dist(Gen);
    for (float &V : HBias)
      V = Dist(Gen);
    for (const GemmVariant &V : Variants) {
      size_t InElt = V.Bf16In ? 2 : 4, OutElt = V.Bf16Out ? 2 : 4;
      // The operands as the variant reads them (bf16 data rounded once; the
      // reference uses the rounded values).
      std::vector<float> RA = HA, RB = HB, RBias = HBias;
      auto Round = [](std::vector<float> &F) {
        for (float &X : F)
          X = fromBf16(toBf16(X));
      };
      if (V.Bf16In) {
        Round(RA);
        Round(RB);
      }
      if (V.Bf16Out)
        Round(RBias);
      void *DA, *DB, *DBias, *DC;
      checkCuda(cudaMalloc(&DA, N * N * InElt), "cudaMalloc");
      checkCuda(cudaMalloc(&DB, N * N * InElt), "cudaMalloc");
      checkCuda(cudaMalloc(&DBias, N * OutElt), "cudaMalloc");
      checkCuda(cudaMalloc(&DC, N * N * OutElt), "cudaMalloc");
      // Uploads F as bf16 words or as f32.
      auto Up = [&](void *D, const std::vector<float> &F, bool Bf16) {
        std::vector<uint16_t> H16;
        if (Bf16)
          for (float X : F)
            H16.push_back(toBf16(X));
        checkCuda(
            cudaMemcpy(D,
                       Bf16 ? static_cast<const void *>(H16.data()) : F.data(),
                       F.size() * (Bf16 ? 2 : 4), cudaMemcpyHostToDevice),
            "h2d");
      };
      Up(DA, HA, V.Bf16In);
      Up(DB, HB, V.Bf16In);
      Up(DBias, HBias, V.Bf16Out);
      float *FA = static_cast<float *>(DA), *FB = static_cast<float *>(DB),
            *FBias = static_cast<float *>(DBias);
      Desc2 MA{FA, FA, 0, {N, N}, {N, 1}}, MB{FB, FB, 0, {N, N}, {N, 1}};
      Desc1 MBias{FBias, FBias, 0, {N}, {1}};
      RawGemm Raw(L, N, V.Bf16In ? CUDA_R_16BF : CUDA_R_32F,
                  V.Bf16Out ? CUDA_R_16BF : CUDA_R_32F, V.Compute, DA, DB,
                  DBias, DC, Stream);

      // Results: both sides once, against each other and float64.
      Desc2 Out{};
      V.Fn(&Out, &MA, &MB, &MBias);
      Raw.enqueue();
      checkCuda(cudaStreamSynchronize(Stream), "cudaStreamSynchronize");
      std::vector<float> Ours(N * N), Theirs(N * N);
      auto Down = [&](std::vector<float> &H, const void *D) {
        if (!V.Bf16Out) {
          checkCuda(cudaMemcpy(H.data(), D, N * N * 4, cudaMemcpyDeviceToHost),
                    "d2h");
          return;
        }
        std::vector<uint16_t> H16(N * N);
        checkCuda(cudaMemcpy(H16.data(), D, N * N * 2, cudaMemcpyDeviceToHost),
                  "d2h");
        for (int64_t I = 0; I < N * N; ++I)
          H[I] = fromBf16(H16[I]);
      };
      Down(Ours, Out.Aligned);
      Down(Theirs, DC);
      checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
      double MaxRel = checkSampledBiasRelu(
          RA, RB, RBias, N, {{"compiled", &Ours}, {"cuBLASLt", &Theirs}}, 256,
          V.Tolerance, Gen,
          std::string("gemm ") + V.Name + " n=" + std::to_string(N));

      // Timing: batches of calls sized to about 50 ms, interleaved.
      double One = now();
      V.Fn(&Out, &MA, &MB, &MBias);
      checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
      One = now() - One;
      int Calls = int(std::clamp(0.05 / std::max(One, 1e-6), 1.0, 200.0));
      Comparison C = interleave(
          A.SecondsPerSize, Calls,
          [&] {
            for (int I = 0; I < Calls; ++I) {
              V.Fn(&Out, &MA, &MB, &MBias);
              checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
            }
          },
          [&] {
            for (int I = 0; I < Calls; ++I) {
              Raw.enqueue();
              checkCuda(cudaStreamSynchronize(Stream), "sync");
            }
          });
      // cuBLASLt with no synchronisation between calls (the stream's
      // throughput), for reference.
      std::vector<double> Unsynced;
      for (int R = 0; R < 5; ++R) {
        double T0 = now();
        for (int I = 0; I < Calls; ++I)
          Raw.enqueue();
        checkCuda(cudaStreamSynchronize(Stream), "sync");
        Unsynced.push_back((now() - T0) / Calls);
      }
      double Flops = 2.0 * N * N * N;
      std::vector<double> Sorted = C.Ratio;
      std::sort(Sorted.begin(), Sorted.end());
      if (Rank == 0)
        std::printf("| %lld | %s | %.1f | %.1f | %.3f (%.3f-%.3f) | %.1f | "
                    "%.1e |\n",
                    (long long)N, V.Label, Flops / median(C.A) / 1e12,
                    Flops / median(C.B) / 1e12, median(C.Ratio), Sorted.front(),
                    Sorted.back(), Flops / median(Unsynced) / 1e12, MaxRel);
      std::fflush(stdout);
      cudaFree(DA);
      cudaFree(DB);
      cudaFree(DBias);
      cudaFree(DC);
    }
  }
}

//===----------------------------------------------------------------------===//
// copy: a memory-bound compiled chain against a device-to-device copy
//===----------------------------------------------------------------------===//

void benchCopy(const Args &A, cudaStream_t Stream) {
  if (Rank == 0)
    std::printf("\n## copy: compiled @ew_chain (8 B read, 4 B written per "
                "element) against cudaMemcpyAsync device to device\n\n"
                "| elements | @ew_chain GB/s | copy GB/s | chain / copy "
                "(median, min-max) |\n|---:|---:|---:|---:|\n");
  for (int64_t N : {int64_t(1) << 26, int64_t(1) << 28}) {
    std::vector<float> HX(N), HY(N);
    for (int64_t I = 0; I < N; ++I) {
      HX[I] = float((I * 7) % 11) * 0.25f - 1.0f;
      HY[I] = float((I * 5) % 13) * 0.125f - 0.75f;
    }
    float *DX, *DY, *DZ;
    checkCuda(cudaMalloc(&DX, N * 4), "cudaMalloc");
    checkCuda(cudaMalloc(&DY, N * 4), "cudaMalloc");
    checkCuda(cudaMalloc(&DZ, N * 4), "cudaMalloc");
    checkCuda(cudaMemcpy(DX, HX.data(), N * 4, cudaMemcpyHostToDevice), "h2d");
    checkCuda(cudaMemcpy(DY, HY.data(), N * 4, cudaMemcpyHostToDevice), "h2d");
    Desc1 MX{DX, DX, 0, {N}, {1}}, MY{DY, DY, 0, {N}, {1}}, Out{};
    _mlir_ciface_ew_chain(&Out, &MX, &MY);
    std::vector<float> Got(N);
    checkCuda(
        cudaMemcpy(Got.data(), Out.Aligned, N * 4, cudaMemcpyDeviceToHost),
        "d2h");
    checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
    for (int64_t I = 0; I < N; I += 997) {
      float X = HX[I], Y = HY[I];
      double Want = std::max((double(X) * Y + X - Y) * 0.5 + 1, 0.0) * X + Y;
      if (std::fabs(Got[I] - Want) > 1e-5 * (1 + std::fabs(Want)))
        fail("@ew_chain: element " + std::to_string(I) + " is " +
             std::to_string(Got[I]) + ", want " + std::to_string(Want));
    }
    int Calls = 10;
    Comparison C = interleave(
        A.SecondsPerSize, Calls,
        [&] {
          for (int I = 0; I < Calls; ++I) {
            _mlir_ciface_ew_chain(&Out, &MX, &MY);
            checkRt(meshrt_device_free(Out.Allocated), "meshrt_device_free");
          }
        },
        [&] {
          for (int I = 0; I < Calls; ++I) {
            checkCuda(cudaMemcpyAsync(DZ, DX, N * 4, cudaMemcpyDeviceToDevice,
                                      Stream),
                      "cudaMemcpyAsync");
            checkCuda(cudaStreamSynchronize(Stream), "sync");
          }
        });
    // Rates: bytes each moves (chain 12 B, copy 8 B per element) per second;
    // the ratio compares rates, not times.
    std::vector<double> RateRatio;
    for (size_t I = 0; I < C.A.size(); ++I)
      RateRatio.push_back((12.0 / C.A[I]) / (8.0 / C.B[I]));
    std::sort(RateRatio.begin(), RateRatio.end());
    if (Rank == 0)
      std::printf("| 2^%d | %.0f | %.0f | %.3f (%.3f-%.3f) |\n",
                  int(std::log2(double(N))), 12.0 * N / median(C.A) / 1e9,
                  8.0 * N / median(C.B) / 1e9, median(RateRatio),
                  RateRatio.front(), RateRatio.back());
    std::fflush(stdout);
    cudaFree(DX);
    cudaFree(DY);
    cudaFree(DZ);
  }
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
  if (wants(A, "gemm"))
    benchGemm(A, Stream);
  if (wants(A, "copy"))
    benchCopy(A, Stream);
  if (wants(A, "syncs"))
    markSyncs();
  mesh_module_fini();
  return 0;
}
